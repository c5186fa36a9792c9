//! The kernel transport on a real kernel: tests that run in the QEMU guest of
//! `cargo xtask realkernel` (a stock Debian kernel's `ib_umad` with two Soft-RoCE ports,
//! `rxe0` and `rxe1`, on a veth pair), gated on `UMAD_REALKERNEL`. Outside the guest they say
//! so and return; the guest reports which ones reached the devices (the xtask's ratchet).
//!
//! The `*_fake` tests run the same checks on [`crate::fake`], so the fake keeps what the real
//! kernel showed. RoCE has no QP0: everything here is GSI (QP1, GRH addressing, LID 0).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::abi::{self, HeaderLayout, IbUserMadRegReq2, RegisterIoctl};
use crate::addr::{Grh, MadAddr};
use crate::agent::{AgentId, AgentSpec, MethodMask};
use crate::device::Devices;
use crate::fake::{Behaviour, Fake, Loss};
use crate::rpc::{Outcome, Request, Rpc, Window};
use crate::transport::kernel::KernelTransport;
use crate::transport::{Received, TransportKind};
use crate::{sys, Error, Port};

/// Set (to anything) by the guest's `/init`.
const GUEST_ENV: &str = "UMAD_REALKERNEL";
/// The file the guest collects the names of the tests that reached the devices in.
const RAN_ENV: &str = "UMAD_RK_RAN";

const GET: u8 = 0x01;
const SET: u8 = 0x02;
const GET_RESP: u8 = 0x81;
const GET_TABLE: u8 = 0x12;
/// A vendor class of range 1: no OUI, no RMPP.
const VENDOR1: u8 = 0x09;
/// A vendor class of range 1 that nobody in the guest registers.
const UNSERVED: u8 = 0x0a;
/// A vendor class of range 2 (OUI, RMPP).
const VENDOR2: u8 = 0x30;
const OUI: u32 = 0x00_1405;
const SA: u8 = 0x03;
/// Requests with this attribute are left unanswered by [`Responder`].
const IGNORED_ATTR: u16 = 0xff00;
/// Data bytes per RMPP segment of a range-2 vendor class (256 - 40-byte header).
const VENDOR2_SEG_DATA: usize = 216;

/// The two RoCE ports of the guest.
struct Guest {
    devices: Devices,
    gids: [[u8; 16]; 2],
}

const NAMES: [&str; 2] = ["rxe0", "rxe1"];

/// The gate of every kernel test: `None` (after saying so) outside the guest; in the guest
/// the test's name is recorded and the devices must be there.
fn guest(test: &str) -> Option<Guest> {
    if std::env::var_os(GUEST_ENV).is_none() {
        eprintln!(
            "realkernel::{test}: not in the real-kernel guest: `cargo xtask realkernel` runs it"
        );
        return None;
    }
    if let Some(path) = std::env::var_os(RAN_ENV) {
        // One write on an O_APPEND file, as ibsim_harness::record_ran (which unit tests of a
        // published crate cannot use) writes the other ran-files.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .and_then(|mut f| f.write_all(format!("umad::realkernel::{test}\n").as_bytes()))
            .expect("writing the guest's ran-file");
    }
    let devices = Devices::new();
    let mut gids = [[0u8; 16]; 2];
    for (i, name) in NAMES.iter().enumerate() {
        let p = devices
            .port(name, 1)
            .unwrap_or_else(|e| panic!("{name} port 1 in the guest: {e}"));
        gids[i][..8].copy_from_slice(&p.gid_prefix.to_be_bytes());
        gids[i][8..].copy_from_slice(&p.port_guid.to_be_bytes());
    }
    Some(Guest { devices, gids })
}

impl Guest {
    fn open(&self, i: usize) -> Port {
        Port::open_kernel(&self.devices, Some(NAMES[i]), 1)
            .unwrap_or_else(|e| panic!("opening {} port 1: {e}", NAMES[i]))
    }

    /// A [`Responder`] on rxe1 answering Gets of [`VENDOR1`] (version 1).
    fn get_responder(&self) -> Responder {
        let spec = AgentSpec::new(VENDOR1, 1).methods(MethodMask::of(&[GET]));
        Responder::spawn(self.open(1), spec, 0)
    }

    /// QP1 of port `i`, addressed by its GID (RoCE needs a GRH).
    fn addr(&self, i: usize) -> MadAddr {
        self.addr_gid(self.gids[i])
    }

    fn addr_gid(&self, gid: [u8; 16]) -> MadAddr {
        MadAddr::gsi(0).with_grh(Grh {
            gid,
            gid_index: 0,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        })
    }
}

/// A MAD of `len` bytes (at least 256): common header, for RMPP classes an RMPP header
/// (ACTIVE when `rmpp_active`), for range-2 vendor classes the OUI, then a pattern seeded by
/// `seed` from byte 40 on.
fn mad(class: u8, version: u8, method: u8, tid: u32, attr: u16, len: usize, seed: u8) -> Vec<u8> {
    let mut m = vec![0u8; len.max(256)];
    m[..4].copy_from_slice(&[1, class, version, method]);
    m[12..16].copy_from_slice(&tid.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    if ibmad::is_rmpp_class(class) {
        m[24] = 1; // RMPP version
        if len > 256 || class == VENDOR2 {
            m[25] = 1; // DATA
            m[26] = 0x01; // ACTIVE (the kernel sets First/Last)
        }
    }
    if ibmad::header::is_vendor_range2(class) {
        m[37..40].copy_from_slice(&OUI.to_be_bytes()[1..]);
    }
    for (i, b) in m[40..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(seed);
    }
    m.truncate(len);
    m
}

fn tid_low(m: &[u8]) -> u32 {
    u32::from_be_bytes(m[12..16].try_into().unwrap())
}

fn tid_high(m: &[u8]) -> u32 {
    u32::from_be_bytes(m[8..12].try_into().unwrap())
}

fn status(m: &[u8]) -> u16 {
    u16::from_be_bytes([m[4], m[5]])
}

/// The response method of a request method (GetTable → GetTableResp, others → GetResp).
fn response_method(method: u8) -> u8 {
    if method == GET_TABLE {
        0x92
    } else {
        GET_RESP
    }
}

/// A thread on a port that answers every request of its agent by echoing it back as the
/// response (the address block copied, as ibsim users do), except requests for
/// [`IGNORED_ATTR`]. A GetTable is answered with `table_records` 64-byte records.
struct Responder {
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<u64>>,
}

impl Responder {
    fn spawn(port: Port, spec: AgentSpec, table_records: usize) -> Responder {
        let agent = port.register(&spec).expect("the responder's agent");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let mut answered = 0;
            while !flag.load(Ordering::Relaxed) {
                let Some(r) = port
                    .recv(Some(Duration::from_millis(50)))
                    .expect("responder recv")
                else {
                    continue;
                };
                if r.agent != agent || r.status != 0 || r.mad[3] & 0x80 != 0 {
                    continue;
                }
                let attr = u16::from_be_bytes([r.mad[16], r.mad[17]]);
                if attr == IGNORED_ATTR {
                    continue;
                }
                let mut reply = if r.mad[3] == GET_TABLE {
                    let mut t = r.mad[..56].to_vec();
                    t[44..46].copy_from_slice(&8u16.to_be_bytes()); // AttributeOffset: 64 bytes
                    for i in 0..table_records {
                        let mut rec = [0u8; 64];
                        rec[..4].copy_from_slice(&(i as u32).to_be_bytes());
                        rec[4..].fill(i as u8);
                        t.extend_from_slice(&rec);
                    }
                    t
                } else {
                    r.mad.clone()
                };
                reply[3] = response_method(r.mad[3]);
                if spec.kernel_rmpp() {
                    reply[24] = 1;
                    reply[25] = 1;
                    reply[26] = 0x01;
                    reply[27] = 0;
                }
                port.send(agent, &reply, &r.addr, 0, 0)
                    .expect("responder send");
                answered += 1;
            }
            answered
        });
        Responder {
            stop,
            handle: Some(handle),
        }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .unwrap()
            .join()
            .expect("responder panicked")
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Waits for the next MAD for `agent` (others are dropped), up to 10 s (TCG is slow).
fn recv_for(port: &Port, agent: AgentId) -> Received {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "nothing for agent {agent} in 10 s");
        if let Some(r) = port.recv(Some(left)).expect("recv") {
            if r.agent == agent {
                return r;
            }
        }
    }
}

// ---- checks run on both the fake and the real kernel ------------------------------------------

/// Agent ids are the lowest free of 32 slots; a 33rd registration fails; unknown ids can
/// neither be unregistered nor send.
fn check_agent_slots(port: &Port, class: u8) {
    let spec = AgentSpec::new(class, 1);
    let ids: Vec<AgentId> = (0..32)
        .map(|_| port.register(&spec).expect("register"))
        .collect();
    assert_eq!(ids, (0..32).collect::<Vec<_>>(), "lowest free slot first");
    let e = port.register(&spec).unwrap_err();
    assert!(matches!(e, Error::TooManyAgents { max: 32, .. }), "{e:?}");
    port.unregister(5).unwrap();
    assert_eq!(port.register(&spec).unwrap(), 5, "a freed slot is reused");
    for id in ids {
        port.unregister(id).unwrap();
    }
    let e = port.unregister(7).unwrap_err();
    assert!(matches!(e, Error::BadAgent { agent: 7, .. }), "{e:?}");
    let m = mad(class, 1, GET, 1, 0x10, 256, 0);
    let e = port.send(7, &m, &MadAddr::gsi(1), 100, 0).unwrap_err();
    assert!(matches!(e, Error::BadAgent { agent: 7, .. }), "{e:?}");
}

/// A request nobody answers ends in a report: status ETIMEDOUT, the request's 24-byte common
/// header with the TID as sent (the transport's upper half), after timeout × (retries + 1).
fn check_timeout_report(port: &Port, class: u8, version: u8, method: u8, addr: &MadAddr) {
    let agent = port
        .register(
            &AgentSpec::new(class, version).rmpp_version(u8::from(ibmad::is_rmpp_class(class))),
        )
        .unwrap();
    let m = mad(class, version, method, 0x7001, IGNORED_ATTR, 256, 1);
    let sent = Instant::now();
    port.send(agent, &m, addr, 150, 1).unwrap();
    let r = recv_for(port, agent);
    let took = sent.elapsed();
    assert_eq!(r.status, libc::ETIMEDOUT as u32, "{r:?}");
    assert_eq!(r.mad.len(), 24, "the report is the common header");
    assert_eq!(&r.mad[..8], &m[..8], "the request's header");
    assert_eq!(tid_low(&r.mad), 0x7001);
    assert_ne!(tid_high(&r.mad), 0, "the transport's TID upper half");
    assert!(
        took >= Duration::from_millis(290),
        "reported after {took:?}"
    );
    port.unregister(agent).unwrap();
}

/// The TID's upper 32 bits belong to the transport: non-zero, one value per agent, carried
/// back in the response.
fn check_tid_high_bits(port: &Port, class: u8, addr: &MadAddr) {
    let agents = [
        port.register(&AgentSpec::new(class, 1)).unwrap(),
        port.register(&AgentSpec::new(class, 1)).unwrap(),
    ];
    let mut his = Vec::new();
    for (n, &agent) in agents.iter().chain(agents.iter()).enumerate() {
        let mut m = mad(class, 1, GET, 0x100 + n as u32, 0x10, 256, n as u8);
        m[8..12].copy_from_slice(&0xdead_beef_u32.to_be_bytes()); // overwritten
        let r = port.transact(agent, &m, addr, 2000, 1).unwrap();
        assert_eq!(r.status, 0, "{r:?}");
        assert_eq!(r.mad[3], GET_RESP);
        assert_eq!(tid_low(&r.mad), 0x100 + n as u32);
        assert_ne!(
            tid_high(&r.mad),
            0xdead_beef,
            "the caller's upper half is replaced"
        );
        assert_ne!(tid_high(&r.mad), 0);
        his.push(tid_high(&r.mad));
    }
    assert_eq!(his[0], his[2], "one agent, one upper half");
    assert_eq!(his[1], his[3]);
    assert_ne!(his[0], his[1], "agents differ");
    for a in agents {
        port.unregister(a).unwrap();
    }
}

/// A second request with the TID of one still in flight from the same agent is refused
/// (`EINVAL`); another TID, or the same one once the first has ended, is not.
fn check_duplicate_tid(port: &Port, addr: &MadAddr) {
    let agent = port
        .register(&AgentSpec::new(SA, 2).rmpp_version(1))
        .unwrap();
    let m = mad(SA, 2, GET_TABLE, 0x4242, IGNORED_ATTR, 256, 0);
    port.send(agent, &m, addr, 300, 0).unwrap();
    let e = port.send(agent, &m, addr, 300, 0).unwrap_err();
    assert!(matches!(e, Error::Send { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    let other = mad(SA, 2, GET_TABLE, 0x4243, IGNORED_ATTR, 256, 0);
    port.send(agent, &other, addr, 300, 0).unwrap();
    let mut reports = 0;
    while reports < 2 {
        let r = recv_for(port, agent);
        assert_eq!(r.status, libc::ETIMEDOUT as u32);
        reports += 1;
    }
    port.send(agent, &m, addr, 100, 0)
        .expect("the first one has ended");
    assert_eq!(recv_for(port, agent).status, libc::ETIMEDOUT as u32);
    port.unregister(agent).unwrap();
}

/// What a port without QP0 and any port refuse at registration: SMP classes
/// (`EPROTONOSUPPORT`, RoCE only) and RMPP on a class without RMPP (`EINVAL`).
fn check_register_refusals(port: &Port) {
    for class in [0x01, 0x81] {
        let e = port.register(&AgentSpec::new(class, 1)).unwrap_err();
        assert!(matches!(e, Error::Register { .. }), "{e:?}");
        assert_eq!(e.errno(), libc::EPROTONOSUPPORT, "class {class:#x}: {e}");
    }
    let e = port
        .register(&AgentSpec::new(VENDOR1, 1).rmpp_version(1))
        .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    // OUI 0 on a range-2 vendor class: refused before the kernel, with the reason.
    let e = port.register(&AgentSpec::new(VENDOR2, 1)).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
}

/// Two agents of one class and version may not share a method (`EINVAL`); without methods,
/// or with other ones, they may.
fn check_method_in_use(port: &Port) {
    let get = AgentSpec::new(VENDOR1, 1).methods(MethodMask::of(&[GET]));
    let first = port.register(&get).unwrap();
    let e = port.register(&get).unwrap_err();
    assert!(matches!(e, Error::Register { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    let set = port
        .register(&AgentSpec::new(VENDOR1, 1).methods(MethodMask::of(&[SET])))
        .unwrap();
    let client = port.register(&AgentSpec::new(VENDOR1, 1)).unwrap();
    let other_version = port
        .register(&AgentSpec::new(VENDOR1, 2).methods(MethodMask::of(&[GET])))
        .unwrap();
    for a in [first, set, client, other_version] {
        port.unregister(a).unwrap();
    }
    port.register(&get).expect("free again once unregistered");
}

#[test]
fn method_in_use_fake() {
    check_method_in_use(&fake_port(Behaviour::default()));
}

#[test]
fn method_in_use_kernel() {
    let Some(g) = guest("method_in_use_kernel") else {
        return;
    };
    check_method_in_use(&g.open(0));
}

fn fake_port(b: Behaviour) -> Port {
    Port::from_transport(Box::new(Fake::new(b)))
}

#[test]
fn agent_slots_fake() {
    check_agent_slots(&fake_port(Behaviour::default()), crate::fake::CLASS);
}

#[test]
fn agent_slots_kernel() {
    let Some(g) = guest("agent_slots_kernel") else {
        return;
    };
    check_agent_slots(&g.open(0), VENDOR1);
}

#[test]
fn timeout_report_fake() {
    let port = fake_port(Behaviour {
        lose_every: 1,
        loss: Loss::Report,
        ..Behaviour::default()
    });
    check_timeout_report(&port, VENDOR1, 1, GET, &MadAddr::gsi(1));
}

#[test]
fn timeout_report_kernel() {
    let Some(g) = guest("timeout_report_kernel") else {
        return;
    };
    let responder = g.get_responder();
    check_timeout_report(&g.open(0), VENDOR1, 1, GET, &g.addr(1));
    // A GetTable to a class nobody serves is not answered either (the kernel answers only Get
    // and Set itself, see `unserved_get_is_answered_by_the_kernel`).
    check_timeout_report(&g.open(0), SA, 2, GET_TABLE, &g.addr(1));
    drop(responder);
}

#[test]
fn tid_high_bits_fake() {
    check_tid_high_bits(&fake_port(Behaviour::default()), VENDOR1, &MadAddr::gsi(1));
}

#[test]
fn tid_high_bits_kernel() {
    let Some(g) = guest("tid_high_bits_kernel") else {
        return;
    };
    let responder = g.get_responder();
    check_tid_high_bits(&g.open(0), VENDOR1, &g.addr(1));
    assert!(responder.stop() >= 4);
}

#[test]
fn duplicate_tid_fake() {
    check_duplicate_tid(
        &fake_port(Behaviour {
            lose_every: 1,
            loss: Loss::Report,
            ..Behaviour::default()
        }),
        &MadAddr::gsi(1),
    );
}

#[test]
fn duplicate_tid_kernel() {
    let Some(g) = guest("duplicate_tid_kernel") else {
        return;
    };
    check_duplicate_tid(&g.open(0), &g.addr(1));
}

#[test]
fn register_refusals_fake() {
    check_register_refusals(&fake_port(Behaviour {
        no_qp0: true,
        ..Behaviour::default()
    }));
}

#[test]
fn register_refusals_kernel() {
    let Some(g) = guest("register_refusals_kernel") else {
        return;
    };
    check_register_refusals(&g.open(0));
}

// ---- the real kernel only -------------------------------------------------------------------

/// Both RoCE ports open through the kernel transport, with the 64-byte header, and sysfs
/// describes them as a RoCE port looks.
#[test]
fn opens_both_roce_ports() {
    let Some(g) = guest("opens_both_roce_ports") else {
        return;
    };
    for (i, name) in NAMES.iter().enumerate() {
        let port = g.open(i);
        assert_eq!(port.transport_kind(), TransportKind::Kernel);
        assert_eq!((port.ca_name(), port.port_num()), (*name, 1));
        let ca = port.ca().unwrap();
        assert_eq!(ca.node_type, crate::device::NodeType::Ca);
        assert_eq!(ca.num_ports(), 1);
        let p = ca.port(1).unwrap();
        assert_eq!(p.link_layer, "Ethernet");
        assert!(p.is_active(), "{p:?}");
        assert_eq!((p.base_lid, p.sm_lid, p.lmc), (0, 0, 0));
        assert_eq!(p.pkeys, [0xffff]);
        assert_eq!(p.gid_prefix, 0xfe80_0000_0000_0000);
        assert_eq!(p.port_guid, ca.node_guid);
        let t = KernelTransport::open(&g.devices, Some(name), 1, false).unwrap();
        assert_eq!(
            t.header_layout(),
            HeaderLayout::WithPkey,
            "ENABLE_PKEY works"
        );
    }
    assert_eq!(g.devices.abi_version().unwrap(), 5);
}

/// `REGISTER_AGENT2`, the legacy `REGISTER_AGENT`, the fallback between them, and the
/// kernel's refusals, at the ioctl level.
#[test]
fn register_ioctls_and_the_fallback() {
    let Some(g) = guest("register_ioctls_and_the_fallback") else {
        return;
    };
    let path = g.devices.umad_device_path("rxe0", 1).unwrap();
    let fd = sys::open_rw_nonblock(&path).unwrap();
    sys::enable_pkey(fd.raw()).unwrap();
    let reg = AgentSpec::new(VENDOR1, 1)
        .methods(MethodMask::of(&[GET]))
        .registration();
    let (id, how) = abi::register_agent(
        &reg,
        |r| sys::register_agent2(fd.raw(), r),
        |r| sys::register_agent(fd.raw(), r),
    )
    .unwrap();
    assert_eq!((id, how), (0, RegisterIoctl::Agent2));
    // A second agent may not take a method the first has on the same class and version.
    let e = sys::register_agent2(fd.raw(), &mut reg.req2()).unwrap_err();
    assert_eq!(
        e.raw_os_error(),
        Some(libc::EINVAL),
        "method already in use"
    );
    // A kernel without REGISTER_AGENT2 (ENOTTY): the legacy ioctl does the same job.
    let (id, how) = abi::register_agent(
        &AgentSpec::new(VENDOR1, 1)
            .methods(MethodMask::of(&[SET]))
            .registration(),
        |_| Err(std::io::Error::from_raw_os_error(libc::ENOTTY)),
        |r| sys::register_agent(fd.raw(), r),
    )
    .unwrap();
    assert_eq!((id, how), (1, RegisterIoctl::Agent));
    // ENABLE_PKEY once agents exist: refused.
    assert_eq!(
        sys::enable_pkey(fd.raw()).unwrap_err().raw_os_error(),
        Some(libc::EINVAL)
    );
    // An unknown flag: EINVAL, and the kernel writes the flags it supports back.
    let mut req: IbUserMadRegReq2 = AgentSpec::new(VENDOR1, 1)
        .flags(0x8000_0000)
        .registration()
        .req2();
    let e = sys::register_agent2(fd.raw(), &mut req).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    assert_eq!(req.flags, crate::abi::USER_RMPP, "the supported flags");
    // ... which umad_register2 hides (libibumad zeroes them before copying back).
    let f = abi::register_agent(
        &AgentSpec::new(VENDOR1, 1).flags(0x8000_0000).registration(),
        |r| sys::register_agent2(fd.raw(), r),
        |r| sys::register_agent(fd.raw(), r),
    )
    .unwrap_err();
    assert_eq!((f.error.raw_os_error(), f.flags), (Some(libc::EINVAL), 0));
    // The kernel's own refusals.
    let refused = |spec: AgentSpec| {
        let mut r = spec.registration().req2();
        sys::register_agent2(fd.raw(), &mut r)
            .unwrap_err()
            .raw_os_error()
    };
    assert_eq!(
        refused(AgentSpec::new(0x81, 1)),
        Some(libc::EPROTONOSUPPORT)
    );
    assert_eq!(
        refused(AgentSpec::new(0x01, 1)),
        Some(libc::EPROTONOSUPPORT)
    );
    assert_eq!(
        refused(AgentSpec::new(VENDOR1, 1).rmpp_version(1)),
        Some(libc::EINVAL)
    );
    assert_eq!(
        refused(AgentSpec::new(VENDOR2, 1)),
        Some(libc::EINVAL),
        "OUI 0"
    );
    for id in [0, 1] {
        sys::unregister_agent(fd.raw(), id).unwrap();
    }
    assert_eq!(
        sys::unregister_agent(fd.raw(), 0)
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EINVAL)
    );
}

/// A Get from rxe0 to rxe1 by GID, answered by copying the address block: what the receiver
/// sees of the sender, and the TID's way back.
#[test]
fn grh_addressing_from_sysfs_gids() {
    let Some(g) = guest("grh_addressing_from_sysfs_gids") else {
        return;
    };
    let (a, b) = (g.open(0), g.open(1));
    let server = b
        .register(&AgentSpec::new(VENDOR1, 1).methods(MethodMask::of(&[GET])))
        .unwrap();
    let client = a.register(&AgentSpec::new(VENDOR1, 1)).unwrap();
    let m = mad(VENDOR1, 1, GET, 0x1001, 0x10, 256, 7);
    a.send(client, &m, &g.addr(1), 3000, 0).unwrap();
    let r = recv_for(&b, server);
    assert_eq!(r.status, 0);
    assert_eq!(
        (r.addr.qpn, r.addr.lid, r.addr.sl, r.addr.pkey_index),
        (1, 0, 0, 0)
    );
    let grh = r.addr.grh.expect("a GRH on RoCE");
    assert_eq!(grh.gid, g.gids[0], "the sender's GID");
    assert_eq!(
        (
            grh.gid_index,
            grh.hop_limit,
            grh.traffic_class,
            grh.flow_label
        ),
        (0, 64, 0, 0)
    );
    assert_eq!(r.mad.len(), 256);
    assert_eq!(&r.mad[16..], &m[16..], "the MAD arrives intact");
    assert_eq!(tid_low(&r.mad), 0x1001);
    let hi = tid_high(&r.mad);
    assert_ne!(hi, 0);
    let mut reply = r.mad.clone();
    reply[3] = GET_RESP;
    b.send(server, &reply, &r.addr, 0, 0).unwrap();
    let back = recv_for(&a, client);
    assert_eq!(back.status, 0);
    assert_eq!((tid_high(&back.mad), tid_low(&back.mad)), (hi, 0x1001));
    assert_eq!(back.addr.grh.map(|g| g.gid), Some(g.gids[1]));
}

/// `Port::transact` and `Rpc` (a window of 16) round trips through the kernel.
#[test]
fn transact_and_rpc_round_trips() {
    let Some(g) = guest("transact_and_rpc_round_trips") else {
        return;
    };
    let responder = g.get_responder();
    let port = Arc::new(g.open(0));
    let agent = port.register(&AgentSpec::new(VENDOR1, 1)).unwrap();
    for i in 0..50u32 {
        let m = mad(VENDOR1, 1, GET, 0x2000 + i, 0x10, 256, i as u8);
        let r = port.transact(agent, &m, &g.addr(1), 2000, 1).unwrap();
        assert_eq!((r.status, r.mad[3]), (0, GET_RESP));
        assert_eq!(&r.mad[40..], &m[40..]);
    }
    let rpc = Rpc::with_window(port.clone(), Window::of(16));
    let requests = (0..200u8).map(|i| {
        Request::new(mad(VENDOR1, 1, GET, 0, 0x10, 256, i), g.addr(1))
            .timeout(Duration::from_secs(2))
            .retries(2)
    });
    let done = rpc.run_all(requests).unwrap();
    assert_eq!(done.len(), 200);
    for c in &done {
        let Outcome::Response(r) = &c.outcome else {
            panic!("{:?}: {:?}", c.ticket, c.outcome);
        };
        assert_eq!(&r.mad[40..], &c.request.mad[40..], "each answer is its own");
    }
    assert!(responder.stop() >= 250);
}

/// RMPP through the kernel both ways, 1 segment to 1 MiB: rxe0 sends a Set of N bytes to
/// rxe1 and rxe1 one to rxe0, each received whole, each byte checked, with the kernel's
/// reassembled RMPP header. (Requests answered by RMPP responses:
/// `rmpp_responses_need_the_method_of_their_acks`.)
#[test]
fn rmpp_both_ways_1_segment_to_1_mib() {
    let Some(g) = guest("rmpp_both_ways_1_segment_to_1_mib") else {
        return;
    };
    let spec = AgentSpec::new(VENDOR2, 1)
        .oui(OUI)
        .rmpp_version(1)
        .methods(MethodMask::of(&[SET]));
    let ports = [g.open(0), g.open(1)];
    let agents = [
        ports[0].register(&spec).unwrap(),
        ports[1].register(&spec).unwrap(),
    ];
    let sizes = [
        100,
        VENDOR2_SEG_DATA,
        VENDOR2_SEG_DATA + 1,
        2 * VENDOR2_SEG_DATA,
        4000,
        10 << 10,
        100 << 10,
        1 << 20,
    ];
    for (n, data) in sizes.into_iter().enumerate() {
        for (from, to) in [(0, 1), (1, 0)] {
            let tid = 0x3000 + (n as u32) * 2 + from as u32;
            let m = mad(VENDOR2, 1, SET, tid, 0x10, 40 + data, n as u8);
            ports[from]
                .send(agents[from], &m, &g.addr(to), 0, 0)
                .unwrap();
            let r = recv_for(&ports[to], agents[to]);
            let what = format!("{data} bytes from {}", NAMES[from]);
            assert_eq!(
                (r.status, r.mad[3], tid_low(&r.mad)),
                (0, SET, tid),
                "{what}"
            );
            assert_eq!(r.mad.len(), 40 + data, "{what}: whole");
            assert!(r.mad[40..] == m[40..], "{what}: the payload differs");
            let segments = data.div_ceil(VENDOR2_SEG_DATA);
            let rmpp = ibmad::Rmpp::new_checked(&r.mad[..]).unwrap();
            assert_eq!(
                r.mad[24..27],
                // Reassembled: the first segment's header, Active|First (and Last for one).
                [1, 1, if segments == 1 { 0x07 } else { 0x03 }],
                "{what}: version 1, DATA, the flags"
            );
            assert_eq!(
                rmpp.payload_length() as usize,
                data + 4 * segments,
                "{what}: the kernel counts the 4 reserved/OUI bytes of each segment"
            );
        }
    }
}

/// Requests answered by RMPP responses of the same size, 1 segment to 1 MiB, through
/// `Port::transact`. The kernel ACKs a response's segments with the response bit of the
/// method cleared (`format_ack`), and routes those ACKs as requests: by class and method. So
/// the agent that answers a Set with a multi-segment GetResp must be registered for Get too —
/// without it the ACKs find no agent, the response's transfer times out (the responder gets a
/// status-110 report) and so does the request. One segment needs no ACK.
#[test]
fn rmpp_responses_need_the_method_of_their_acks() {
    let Some(g) = guest("rmpp_responses_need_the_method_of_their_acks") else {
        return;
    };
    let spec = AgentSpec::new(VENDOR2, 1).oui(OUI).rmpp_version(1);
    let responder = Responder::spawn(g.open(1), spec.methods(MethodMask::of(&[GET, SET])), 0);
    let port = g.open(0);
    let agent = port.register(&spec).unwrap();
    let sizes = [
        100,
        VENDOR2_SEG_DATA,
        VENDOR2_SEG_DATA + 1,
        4000,
        10 << 10,
        100 << 10,
        1 << 20,
    ];
    for (n, data) in sizes.into_iter().enumerate() {
        let m = mad(VENDOR2, 1, SET, 0x3400 + n as u32, 0x10, 40 + data, n as u8);
        let r = port.transact(agent, &m, &g.addr(1), 10_000, 0).unwrap();
        assert_eq!((r.status, r.mad[3]), (0, GET_RESP), "{data} bytes");
        assert_eq!(r.mad.len(), 40 + data, "{data} bytes came back whole");
        assert!(r.mad[40..] == m[40..], "{data} bytes: the payload differs");
    }
    assert!(responder.stop() >= sizes.len() as u64);

    // Registered for Set only: one segment still comes back, two do not.
    let (b, server) = {
        let b = g.open(1);
        let server = b.register(&spec.methods(MethodMask::of(&[SET]))).unwrap();
        (b, server)
    };
    for (n, data) in [VENDOR2_SEG_DATA, VENDOR2_SEG_DATA + 1]
        .into_iter()
        .enumerate()
    {
        let m = mad(VENDOR2, 1, SET, 0x3500 + n as u32, 0x10, 40 + data, 1);
        port.send(agent, &m, &g.addr(1), 1000, 0).unwrap();
        let r = recv_for(&b, server);
        let mut reply = r.mad.clone();
        reply[3] = GET_RESP;
        b.send(server, &reply, &r.addr, 300, 0).unwrap();
        let back = recv_for(&port, agent);
        if n == 0 {
            assert_eq!((back.status, back.mad.len()), (0, 40 + data), "one segment");
        } else {
            assert_eq!(back.status, libc::ETIMEDOUT as u32, "the request times out");
            let report = recv_for(&b, server);
            assert_eq!(
                (report.status, report.mad[3]),
                (libc::ETIMEDOUT as u32, GET_RESP),
                "the response's transfer was never ACKed"
            );
        }
    }
}

/// An SA-style GetTable (one MAD) answered by an RMPP GetTableResp of 200 records.
#[test]
fn sa_get_table_through_kernel_rmpp() {
    let Some(g) = guest("sa_get_table_through_kernel_rmpp") else {
        return;
    };
    let spec = AgentSpec::new(SA, 2).rmpp_version(1);
    let responder = Responder::spawn(g.open(1), spec.methods(MethodMask::of(&[GET_TABLE])), 200);
    let port = g.open(0);
    let agent = port.register(&spec).unwrap();
    let m = mad(SA, 2, GET_TABLE, 0x5001, 0x11, 256, 0);
    let r = port.transact(agent, &m, &g.addr(1), 5000, 1).unwrap();
    assert_eq!((r.status, r.mad[3]), (0, 0x92));
    assert_eq!(r.mad.len(), 56 + 200 * 64);
    for (i, rec) in r.mad[56..].chunks(64).enumerate() {
        assert_eq!(rec[..4], (i as u32).to_be_bytes());
        assert!(rec[4..].iter().all(|&b| b == i as u8), "record {i}");
    }
    assert!(responder.stop() >= 1);
}

/// The kernel's `ENOSPC`: a receive with room for less leaves the message queued and names
/// its length; the next receive gets it whole.
#[test]
fn recv_fit_too_long_against_enospc() {
    let Some(g) = guest("recv_fit_too_long_against_enospc") else {
        return;
    };
    let spec = AgentSpec::new(VENDOR2, 1).oui(OUI).rmpp_version(1);
    let (a, b) = (g.open(0), g.open(1));
    let server = b.register(&spec.methods(MethodMask::of(&[SET]))).unwrap();
    let client = a.register(&spec).unwrap();
    let m = mad(VENDOR2, 1, SET, 0x6001, 0x10, 40 + (10 << 10), 3);
    a.send(client, &m, &g.addr(1), 0, 0).unwrap();
    assert!(
        b.poll(Some(Duration::from_secs(10))).unwrap(),
        "nothing arrived"
    );
    let e = b.recv_fit(Some(Duration::from_secs(1)), 256).unwrap_err();
    assert!(
        matches!(
            e,
            Error::TooLong {
                needed: 10280,
                capacity: 256,
                ..
            }
        ),
        "{e:?}"
    );
    let e = b.recv_fit(Some(Duration::ZERO), 10279).unwrap_err();
    assert!(
        matches!(e, Error::TooLong { needed: 10280, .. }),
        "still queued: {e:?}"
    );
    let r = b
        .recv_fit(Some(Duration::ZERO), 10280)
        .unwrap()
        .expect("the message");
    assert_eq!(r.agent, server);
    assert_eq!(r.mad.len(), 10280);
    assert!(r.mad[40..] == m[40..]);
}

/// A Get or Set to a class nobody registered is answered by the peer's kernel itself: a
/// GetResp with MAD status 0x000c (unsupported method/attribute), at once.
#[test]
fn unserved_get_is_answered_by_the_kernel() {
    let Some(g) = guest("unserved_get_is_answered_by_the_kernel") else {
        return;
    };
    let port = g.open(0);
    let agent = port.register(&AgentSpec::new(UNSERVED, 1)).unwrap();
    for (i, method) in [GET, SET].into_iter().enumerate() {
        let m = mad(UNSERVED, 1, method, 0x8000 + i as u32, 0x10, 256, 0);
        let sent = Instant::now();
        let r = port.transact(agent, &m, &g.addr(1), 5000, 0).unwrap();
        assert_eq!(r.status, 0, "{r:?}");
        assert_eq!(r.mad[3], GET_RESP, "method {method:#x}");
        assert_eq!(status(&r.mad), 0x000c);
        assert!(
            sent.elapsed() < Duration::from_secs(4),
            "{:?}",
            sent.elapsed()
        );
    }
}

/// `UMAD_USER_RMPP`: the receiver gets the raw first segment; nobody ACKs, so the sender's
/// kernel RMPP reports a timeout.
#[test]
fn user_rmpp_receives_raw_segments() {
    let Some(g) = guest("user_rmpp_receives_raw_segments") else {
        return;
    };
    let (a, b) = (g.open(0), g.open(1));
    let raw = AgentSpec::new(VENDOR2, 1)
        .oui(OUI)
        .rmpp_version(1)
        .user_rmpp();
    let server = b.register(&raw.methods(MethodMask::of(&[SET]))).unwrap();
    let client = a
        .register(&AgentSpec::new(VENDOR2, 1).oui(OUI).rmpp_version(1))
        .unwrap();
    let m = mad(VENDOR2, 1, SET, 0x9001, 0x10, 40 + (10 << 10), 5);
    a.send(client, &m, &g.addr(1), 300, 0).unwrap();
    let seg = recv_for(&b, server);
    assert_eq!(seg.mad.len(), 256, "one raw segment");
    let rmpp = ibmad::Rmpp::new_checked(&seg.mad[..]).unwrap();
    assert_eq!(seg.mad[24..27], [1, 1, 0x03]);
    assert_eq!(rmpp.segment_number(), 1);
    assert_eq!(rmpp.payload_length(), 10432);
    assert!(seg.mad[40..] == m[40..256], "the first 216 data bytes");
    let report = recv_for(&a, client);
    assert_eq!(report.status, libc::ETIMEDOUT as u32);
}

/// A send without a GRH cannot make a RoCE address handle: `EINVAL` from write().
#[test]
fn send_without_grh_is_refused() {
    let Some(g) = guest("send_without_grh_is_refused") else {
        return;
    };
    let port = g.open(0);
    let agent = port.register(&AgentSpec::new(VENDOR1, 1)).unwrap();
    let e = port
        .send(
            agent,
            &mad(VENDOR1, 1, GET, 1, 0x10, 256, 0),
            &MadAddr::gsi(0),
            100,
            0,
        )
        .unwrap_err();
    assert!(matches!(e, Error::Send { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
}

/// 10,000 unregister/register cycles: the slot is reused every time and the port still works.
#[test]
fn reregister_10000_times() {
    let Some(g) = guest("reregister_10000_times") else {
        return;
    };
    let responder = g.get_responder();
    let port = g.open(0);
    let keep = port.register(&AgentSpec::new(VENDOR1, 1)).unwrap();
    for i in 0..10_000 {
        let a = port.register(&AgentSpec::new(VENDOR1, 1)).unwrap();
        assert_eq!(a, 1, "cycle {i}");
        port.unregister(a).unwrap();
    }
    let r = port
        .transact(
            keep,
            &mad(VENDOR1, 1, GET, 0xa001, 0x10, 256, 0),
            &g.addr(1),
            2000,
            1,
        )
        .unwrap();
    assert_eq!((r.status, r.mad[3]), (0, GET_RESP));
    assert!(responder.stop() >= 1);
}

/// Eight threads transacting on one `Port` each get exactly their own answers.
#[test]
fn eight_threads_on_one_port() {
    let Some(g) = guest("eight_threads_on_one_port") else {
        return;
    };
    let responder = g.get_responder();
    let port = g.open(0);
    let agents = [
        port.register(&AgentSpec::new(VENDOR1, 1)).unwrap(),
        port.register(&AgentSpec::new(VENDOR1, 1)).unwrap(),
    ];
    let addr = g.addr(1);
    thread::scope(|s| {
        for t in 0..8u32 {
            let (port, addr) = (&port, &addr);
            let agent = agents[t as usize % 2];
            s.spawn(move || {
                for i in 0..40u32 {
                    let mut m = mad(VENDOR1, 1, GET, (t << 16) | i, 0x10, 256, 0);
                    m[64..68].copy_from_slice(&t.to_be_bytes());
                    m[68..72].copy_from_slice(&i.to_be_bytes());
                    let r = port.transact(agent, &m, addr, 3000, 2).unwrap();
                    assert_eq!((r.agent, r.status, r.mad[3]), (agent, 0, GET_RESP));
                    assert_eq!(tid_low(&r.mad), (t << 16) | i);
                    assert_eq!(r.mad[64..72], m[64..72], "thread {t} #{i}");
                }
            });
        }
    });
    assert!(responder.stop() >= 320);
}

/// A write() to a GID whose neighbour cannot be resolved blocks about 1 s in the kernel and
/// fails with `ETIMEDOUT`. umad holds no lock of its own across it: the port's own state
/// answers at once meanwhile, and another port of the same device keeps its round trips
/// going. The kernel itself holds the fd's mutex across the resolution (`ib_umad_write`;
/// `poll` and `read` take it too), so a poll or read on the *same* fd waits in the kernel
/// until the write gives up: it then gets its MAD, correctly.
#[test]
fn a_blocking_write_stalls_nothing_of_ours() {
    let Some(g) = guest("a_blocking_write_stalls_nothing_of_ours") else {
        return;
    };
    let responder = g.get_responder();
    let port = g.open(0);
    let other = g.open(0);
    let agent = port.register(&AgentSpec::new(VENDOR1, 1)).unwrap();
    let other_agent = other.register(&AgentSpec::new(VENDOR1, 1)).unwrap();
    // One answer waiting on `port`'s fd.
    port.send(
        agent,
        &mad(VENDOR1, 1, GET, 0xb000, 0x10, 256, 0),
        &g.addr(1),
        2000,
        0,
    )
    .unwrap();
    assert!(port.poll(Some(Duration::from_secs(5))).unwrap());
    let mut unreachable = [0u8; 16];
    unreachable[..2].copy_from_slice(&[0xfe, 0x80]);
    unreachable[11..].copy_from_slice(&[0xff, 0xfe, 0x00, 0x12, 0x34]);
    let blocked = AtomicBool::new(true);
    thread::scope(|s| {
        let writer = s.spawn(|| {
            let started = Instant::now();
            let r = port.send(
                agent,
                &mad(VENDOR1, 1, GET, 0xb001, 0x10, 256, 0),
                &g.addr_gid(unreachable),
                100,
                0,
            );
            blocked.store(false, Ordering::SeqCst);
            (r, started.elapsed())
        });
        thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        // Nothing of ours is held: the port's own state answers at once.
        let _ = port.dropped();
        assert!(
            started.elapsed() < Duration::from_millis(100),
            "{:?}",
            started.elapsed()
        );
        let mut trips = 0;
        while blocked.load(Ordering::SeqCst) && trips < 1000 {
            let m = mad(VENDOR1, 1, GET, 0xc000 + trips, 0x10, 256, 0);
            let r = other
                .transact(other_agent, &m, &g.addr(1), 2000, 0)
                .unwrap();
            assert_eq!(r.status, 0);
            trips += 1;
        }
        // The same fd: the kernel's mutex makes this read wait for the write.
        let queued = port.recv(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(queued.map(|q| tid_low(&q.mad)), Some(0xb000));
        let (r, took) = writer.join().unwrap();
        let e = r.unwrap_err();
        assert_eq!(e.errno(), libc::ETIMEDOUT, "{e}");
        assert!(took >= Duration::from_millis(500), "blocked {took:?}");
        assert!(
            trips >= 2,
            "the other port made {trips} round trips in {took:?}"
        );
    });
    drop(responder);
}
