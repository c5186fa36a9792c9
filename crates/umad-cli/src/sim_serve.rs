//! `umad sim serve <netfile|name> [--socket NAME] [--configured] [--faults SPEC]`: a daemon
//! in place of ibsim that speaks ibsim's socket protocol ([`umad::carrier::ibsim::wire`])
//! over a simulated fabric ([`ibnetsim::Fabric`]), so that C tools under umad2sim, the
//! native client (`UMAD_IBSIM`) and the drop-in work against it unchanged. The fabric is an
//! ibsim netfile or a built-in name ([`ibnetsim::Fabric::load_named`]: `example`,
//! `fattree:36,8,28`, ...; a path that exists wins).
//!
//! Seeded faults ([`ibnetsim::faults`]; `--faults` at start, a bad spec a usage error naming
//! the item): a packet a fault loses on a link or into a dead node gets no answer at all
//! (the sender times out, as on a fabric; ibsim's error rates bounce it with status 110
//! instead); a late answer is sent when it falls due, by a timer thread that sleeps until
//! the next one (other answers are not held up behind it); a duplicated answer is sent
//! twice; a flipped bit is already in the answer.
//!
//! As ibsim does:
//! - the control socket `<base>:ctl` answers CONNECT (a node by id or NodeDescription, by
//!   default the first node of the netfile; a CA at its first port, a switch at port 0; a
//!   second SM client on one node is refused), DISCONNECT and the GET_*/SET_ISSM requests,
//!   NodeInfo and PortInfo as the node's own SMA answers them, adjusted where ibsim's
//!   control channel returns its stored copies (NodeInfo's PortGUID is the node GUID and its
//!   LocalPortNum that of the node's template; PortInfo's LocalPortNum is the port's own);
//! - each client slot has its data socket `<base>:out<slot>`, connected to the client's
//!   `<base>:in<id>`; a request's TID bits 48-63 are stamped with the slot, the request goes
//!   through [`ibnetsim::Fabric::deliver`] from the client's port, the answer comes back with
//!   addresses and QPs swapped, and a request nothing answers comes back at once, unchanged,
//!   with status 110 (ibsim's fast failure, which C tools rely on); malformed packets
//!   (bad versions, a directed route with a hop pointer, a wrong direction bit or LID-routed
//!   parts) and TrapRepress are dropped without an answer.
//!
//! Unlike ibsim: no ten-client limit (slots up to the 65,536 that fit the TID's 16 bits, each
//! data socket bound when its slot is first used); a client that went away without
//! DISCONNECT loses its slot when a send to it fails or when the next client connects (its
//! `<base>:in<id>` no longer exists); the console is a socket, `<base>:console`, for
//! `umad sim ctl` ([`crate::sim_ctl`]: `link NODE PORT down|up`, `fault SPEC`, `counters`,
//! `errors`, `status`, `quit`), not the daemon's stdin.
//!
//! Traps: a link that changes state (by `umad sim ctl link`, or by an SM's Set of PortState
//! Down or PortPhysicalState Disabled/Polling) makes the switch at each end raise Trap 128
//! ([`ibnetsim::trap`]: only once the SM has set the switch's LID and MasterSMLID, as
//! ibsim's `send_trap`); the daemon takes them after each packet and command, routes each
//! by LID from the switch to its MasterSMLID and sends it to the SM client attached where
//! it lands (DLID the SM LID, SLID the switch's, QP 0), after the answer to the Set that
//! raised it. ibsim sends Trap 128 only from its console's and netfile's link commands.
//!
//! Requests the fabric does not answer (`Dropped::NoAgent`: SA, SMInfo and traps at an IsSM
//! port, vendor and CM classes) go, as ibsim forwards them, unchanged but for the filled-in
//! SLID and the TID's slot stamp, to the client attached at the port they arrived at with
//! their QP (above 1), or for QP 0/1 to that port's SM client (CONNECT with issm or
//! SET_ISSM, which also sets IsSM in the SMA's PortInfo); with none there they come back
//! with status 110. A response a client sends goes, by LID or along its return path
//! (`Fabric::route_response`), to the client whose slot is in TID bits 48-63 if it lands
//! on that client's port, else back with status 110. Not yet: a forwarded directed-route
//! request does not carry ibsim's return path, no Trap 144 on SET_ISSM.
//!
//! Threads: one for the control socket, one per slot (its client's packets, answered in
//! turn), one timer, one console; the fabric is behind one lock, held to compute an answer
//! and never across socket I/O, so the slots' reads and writes run on every core.
//! Measured (2-core VM, release build; `smp_rate_with_one_and_with_several_clients` in
//! `tests/sim_serve_ctl.rs`: raw clients in one process, each with one directed-route
//! NodeInfo four hops out in flight, on `fattree:36,8,28`): one client 40,000-58,000 SMPs/s (the daemon using
//! 0.23-0.30 of a core: each answer waits for the client's next request), 2-8 clients
//! 60,000-150,000 SMPs/s (the daemon using 0.6-0.86 cores, the clients the rest of the
//! two); 50 `umad smpquery`/`ibnetdiscover` processes at once on the same fabric are all
//! answered as one alone is.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use clap::{Arg, ArgAction, Command};
use ibmad::attr::id;
use ibnetsim::{Dropped, Fabric, Fate, NodeIdx};
use umad::carrier::ibsim::wire::{self, ctl, Ctl, Request};

use crate::exit;

/// How long a reply may wait for room in a client's socket before it is dropped.
const SEND_WAIT: Duration = Duration::from_millis(200);

/// The fate of an answer no fault touched: at once, once.
const PLAIN: Fate = Fate {
    delay_ns: 0,
    copies: 1,
};

/// The clap command of `umad sim`.
pub fn command() -> Command {
    Command::new("sim")
        .about("ibsim's place: serve a simulated fabric over ibsim's socket protocol")
        .subcommand_required(true)
        .subcommand(
            Command::new("serve")
                .about(
                    "serve <netfile> as ibsim does (unconfigured: no SM has swept it), for C \
                     tools under umad2sim (IBSIM_SOCKNAME), umad (UMAD_IBSIM) and the drop-in",
                )
                .arg(
                    Arg::new("netfile")
                        .required(true)
                        .value_name("NETFILE|NAME")
                        .value_parser(clap::value_parser!(std::path::PathBuf))
                        .help(
                            "the fabric: an ibsim netfile, or a built-in name (example, \
                             fattree:36,8,28, fattree3:..., ring:6,2, mesh:4x4, torus:8x8,2)",
                        ),
                )
                .arg(
                    Arg::new("faults")
                        .long("faults")
                        .num_args(1)
                        .value_name("SPEC")
                        .help(
                            "seeded faults from the start, e.g. seed=7,drop=5%,delay=10%@1ms..5ms \
                             (items: seed=, drop=, drop[NODE]=, drop[NODE/PORT]=, dead=, alive=, \
                             delay=R@D1..D2, dup=, flip=, clear)",
                        ),
                )
                .arg(
                    Arg::new("socket")
                        .long("socket")
                        .short('s')
                        .num_args(1)
                        .value_name("NAME")
                        .help("the socket base name (ibsim's IBSIM_SOCKNAME; default \"sim\")"),
                )
                .arg(
                    Arg::new("configured")
                        .long("configured")
                        .action(ArgAction::SetTrue)
                        .help(
                            "start configured, as after an SM's sweep (LIDs, Active ports, LFTs)",
                        ),
                ),
        )
        .subcommand(crate::sim_ctl::command())
}

/// `umad sim`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let argv = std::iter::once(OsString::from(prog)).chain(args);
    let m = match command()
        .name(prog)
        .bin_name(format!("umad {prog}"))
        .try_get_matches_from(argv)
    {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
        }
    };
    let m = match m.subcommand() {
        Some(("serve", m)) => m,
        Some(("ctl", m)) => return crate::sim_ctl::run(m),
        _ => return exit::USAGE,
    };
    let netfile = m
        .get_one::<std::path::PathBuf>("netfile")
        .expect("required");
    let base = m
        .get_one::<String>("socket")
        .cloned()
        .unwrap_or_else(|| wire::DEFAULT_BASE.to_string());
    let mut fabric = match Fabric::load_named(netfile) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("umad {prog} serve: {e}");
            return exit::FAILURE;
        }
    };
    if fabric.is_empty() {
        eprintln!(
            "umad {prog} serve: {} defines no node to attach clients to",
            netfile.display()
        );
        return exit::FAILURE;
    }
    if m.get_flag("configured") && fabric.configure(None).is_none() {
        eprintln!(
            "umad {prog} serve: {} has more ports than there are unicast LIDs (0xbfff): serve it \
             without --configured",
            netfile.display()
        );
        return exit::FAILURE;
    }
    let faults = m.get_one::<String>("faults").cloned();
    if let Some(spec) = &faults {
        if let Err(e) = fabric.apply_faults(spec) {
            eprintln!("umad {prog} serve: --faults: {e}");
            return exit::USAGE;
        }
    }
    let name = netfile.display().to_string();
    let server = match Server::bind(&base, fabric, name, faults.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "umad {prog} serve: cannot bind @{} or @{}: {e} (is an ibsim or another \
                 server using that name? choose another with --socket)",
                wire::server_ctl(&base),
                crate::sim_ctl::console_name(&base)
            );
            return exit::FAILURE;
        }
    };
    println!(
        "Network simulator ready.\n{} nodes from {}, socket @{} (IBSIM_SOCKNAME={base}, \
         UMAD_IBSIM={base}); control: umad sim ctl --socket {base} help (@{})",
        server.state().fabric.len(),
        netfile.display(),
        wire::server_ctl(&base),
        crate::sim_ctl::console_name(&base)
    );
    let _ = io::stdout().flush();
    server.serve_control();
    exit::FAILURE
}

/// A client attached to a slot.
#[derive(Debug, Clone)]
struct Client {
    /// The id it connected with (its sockets' number).
    id: u32,
    /// Its data socket's name, `<base>:in<id>`.
    peer: String,
    /// Where it is attached.
    at: (NodeIdx, u8),
    /// Whether it attached as the node's SM (CONNECT with issm, or SET_ISSM).
    issm: bool,
    /// The QP it connected with (a client with a QP above 1 gets that QP's packets).
    qp: u32,
}

/// One client slot: its data socket, bound on first use and kept.
#[derive(Debug)]
struct Slot {
    sock: Arc<UnixDatagram>,
    /// Bumped on every CONNECT to this slot, under `sending`: a reply computed for an
    /// earlier client of the slot is not sent to the next one.
    generation: Arc<AtomicU64>,
    /// Held while sending on `sock`, and while `sock` is connected to a new client.
    sending: Arc<Mutex<()>>,
    client: Option<Client>,
}

#[derive(Debug)]
struct State {
    fabric: Fabric,
    slots: Vec<Slot>,
    /// The fault spec items applied since the last `clear` (the seed kept), for `status`.
    fault_items: Vec<String>,
}

/// The daemon: the control socket, the fabric and the slots.
#[derive(Debug)]
struct Server {
    base: String,
    ctl: UnixDatagram,
    /// The control interface's socket, `<base>:console` (`umad sim ctl`).
    console: UnixDatagram,
    state: Mutex<State>,
    timer: Timer,
    /// What the fabric is (the netfile or name it was loaded from).
    fabric_name: String,
    started: Instant,
    /// Requests from clients served (answered, forwarded or bounced).
    packets: AtomicU64,
    /// Traps handed to an SM client, and traps that found none (no route, no SM there).
    traps_sent: AtomicU64,
    traps_undelivered: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether something is bound at `name` (a client that died has no sockets left).
fn alive(name: &str) -> bool {
    let Ok(addr) = wire::abstract_addr(name) else {
        return false;
    };
    match UnixDatagram::unbound().and_then(|s| s.connect_addr(&addr)) {
        Ok(()) => true,
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
        ),
    }
}

impl State {
    fn is_switch(&self, node: NodeIdx) -> bool {
        self.fabric.node(node).is_switch()
    }

    /// Frees slot `slot` (its client went away), clearing IsSM as ibsim does for a dead
    /// client.
    fn drop_client(&mut self, slot: usize) {
        if let Some(c) = self.slots[slot].client.take() {
            if c.issm {
                self.fabric.set_is_sm(c.at, false);
            }
        }
    }

    /// NodeInfo as ibsim's control channel returns it: its stored copy, whose PortGUID is
    /// the node GUID and whose LocalPortNum is the template's (1 on a CA, 0 on a switch).
    fn node_info(&mut self, at: (NodeIdx, u8)) -> [u8; 64] {
        let mut out = [0u8; 64];
        let got = self.fabric.local_get(at, id::NODE_INFO, 0).ok();
        if let Some(mut ni) = got.and_then(|d| ibmad::NodeInfo::parse(&d).ok()) {
            ni.port_guid = ni.node_guid;
            ni.local_port_num = u8::from(!self.is_switch(at.0));
            ni.emit(&mut out);
        }
        out
    }

    /// PortInfo of `port` as ibsim's control channel returns it: LocalPortNum the port's own
    /// (0 on a switch); IsSM as SET_ISSM left it, as the SMA shows it.
    fn port_info(&mut self, at: (NodeIdx, u8), port: u8) -> [u8; 64] {
        let mut out = [0u8; 64];
        let switch = self.is_switch(at.0);
        let got = self
            .fabric
            .local_get(at, id::PORT_INFO, u32::from(port))
            .ok();
        if let Some(mut pi) = got.and_then(|d| ibmad::PortInfo::parse(&d).ok()) {
            pi.local_port_num = if switch { 0 } else { port };
            pi.emit(&mut out);
        }
        out
    }

    /// The port a packet that arrived at `port` of `node` is for, as ibsim matches clients
    /// (by port GUID: a switch's ports share port 0's).
    fn client_port(&self, (node, port): (NodeIdx, u8)) -> (NodeIdx, u8) {
        (node, if self.is_switch(node) { 0 } else { port })
    }

    /// The client a packet arriving at `at` goes to (ibsim's `find_client`): for a response,
    /// the one in the slot its TID names if attached there; else one attached there with
    /// the packet's QP (above 1), or for a request on QP 0 or 1 the SM client there.
    fn find_client(
        &self,
        at: (NodeIdx, u8),
        response: bool,
        dqp: u32,
        tid_slot: u16,
    ) -> Option<usize> {
        let at = self.client_port(at);
        if response {
            let i = usize::from(tid_slot);
            if self
                .slots
                .get(i)
                .and_then(|s| s.client.as_ref())
                .is_some_and(|c| c.at == at)
            {
                return Some(i);
            }
        }
        self.slots.iter().position(|s| {
            s.client.as_ref().is_some_and(|c| {
                c.at == at
                    && if dqp > 1 {
                        c.qp == dqp
                    } else {
                        !response && c.issm
                    }
            })
        })
    }

    /// The port GET_PORTINFO's data byte 0 names: 0 or past the last port is the attached
    /// port; on a CA, port n is ibsim's `node_get_port(node, n - 1)`, which is port n - 1
    /// but port 1 for n = 1 and 2 (ibsim's off-by-one, kept: clients ask for 0).
    fn portinfo_port(&self, at: (NodeIdx, u8), n: u8) -> u8 {
        let node = self.fabric.node(at.0);
        if n == 0 || n > node.spec.num_ports {
            at.1
        } else if node.is_switch() {
            n
        } else {
            (n - 1).max(1)
        }
    }
}

impl Server {
    fn bind(
        base: &str,
        fabric: Fabric,
        fabric_name: String,
        faults: Option<&str>,
    ) -> io::Result<Arc<Server>> {
        let ctl = UnixDatagram::bind_addr(&wire::abstract_addr(&wire::server_ctl(base))?)?;
        let console =
            UnixDatagram::bind_addr(&wire::abstract_addr(&crate::sim_ctl::console_name(base))?)?;
        console.set_write_timeout(Some(SEND_WAIT))?;
        let mut fault_items = Vec::new();
        if let Some(spec) = faults {
            note_fault_items(&mut fault_items, spec);
        }
        let server = Arc::new(Server {
            base: base.to_string(),
            ctl,
            console,
            state: Mutex::new(State {
                fabric,
                slots: Vec::new(),
                fault_items,
            }),
            timer: Timer::default(),
            fabric_name,
            started: Instant::now(),
            packets: AtomicU64::new(0),
            traps_sent: AtomicU64::new(0),
            traps_undelivered: AtomicU64::new(0),
        });
        let timer = Arc::clone(&server);
        std::thread::Builder::new()
            .name("timer".into())
            .spawn(move || timer.serve_timer())?;
        let console = Arc::clone(&server);
        std::thread::Builder::new()
            .name("console".into())
            .spawn(move || console.serve_console())?;
        Ok(server)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The control loop; returns only if the socket fails.
    fn serve_control(self: &Arc<Server>) {
        let mut buf = [0u8; 512];
        loop {
            let (n, from) = match self.ctl.recv_from(&mut buf) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("umad sim serve: the control socket failed: {e}");
                    return;
                }
            };
            let Some(mut c) = Ctl::decode(&buf[..n]) else {
                continue;
            };
            if c.magic != wire::MAGIC {
                continue;
            }
            self.control(&mut c);
            // A client that went away before the answer: nothing to do.
            let _ = self.ctl.send_to_addr(&c.encode(), &from);
        }
    }

    /// Answers one control request in place (ibsim's `sim_ctl`).
    fn control(self: &Arc<Server>, c: &mut Ctl) {
        if c.typ == ctl::CONNECT {
            if self.connect(c).is_err() {
                c.typ = ctl::ERROR;
            }
            return;
        }
        let mut st = self.state();
        let slot = c.client as usize;
        let Some(client) = st.slots.get(slot).and_then(|s| s.client.clone()) else {
            // ibsim answers a DISCONNECT of a free slot as done.
            if c.typ != ctl::DISCONNECT {
                c.typ = ctl::ERROR;
            }
            return;
        };
        let at = client.at;
        let d = &mut c.data;
        match c.typ {
            ctl::DISCONNECT => {
                // ibsim leaves IsSM as it was on a DISCONNECT (SET_ISSM clears it).
                st.slots[slot].client = None;
            }
            ctl::GET_PORT => {
                let pi = st.port_info(at, at.1);
                wire::SimPort {
                    lid: u16::from_be_bytes([pi[16], pi[17]]),
                    state: pi[32] & 0x0f,
                }
                .encode_into(d);
            }
            ctl::GET_VENDOR => {
                let ni = st.node_info(at);
                wire::Vendor {
                    vendor_id: u32::from_be_bytes([0, ni[37], ni[38], ni[39]]),
                    vendor_part_id: u32::from(u16::from_be_bytes([ni[30], ni[31]])),
                    hw_ver: u32::from_be_bytes([ni[32], ni[33], ni[34], ni[35]]),
                    fw_ver: 1,
                }
                .encode_into(d);
            }
            ctl::GET_GID => {
                let pi = st.port_info(at, at.1);
                let guid = st.fabric.node(at.0).spec.guid;
                d[0..8].copy_from_slice(&pi[8..16]);
                d[8..16].copy_from_slice(&guid.to_ne_bytes());
            }
            ctl::GET_GUID => {
                let guid = st.fabric.node(at.0).spec.guid;
                d[0..8].copy_from_slice(&guid.to_ne_bytes());
            }
            ctl::GET_NODEINFO => *d = st.node_info(at),
            ctl::GET_PORTINFO => {
                let port = st.portinfo_port(at, d[0]);
                *d = st.port_info(at, port);
            }
            ctl::SET_ISSM => {
                let on = i32::from_ne_bytes([d[0], d[1], d[2], d[3]]) != 0;
                if let Some(cl) = st.slots[slot].client.as_mut() {
                    cl.issm = on;
                }
                st.fabric.set_is_sm(at, on);
            }
            ctl::GET_PKEYS => {
                // ibsim's table: 0xffff first, the rest of the partition capacity 0.
                let ni = st.node_info(at);
                let cap = u16::from_be_bytes([ni[28], ni[29]]);
                d.fill(0);
                if cap > 0 {
                    d[0..2].copy_from_slice(&0xffffu16.to_ne_bytes());
                }
            }
            // ibsim warns and echoes anything else unchanged.
            _ => {}
        }
    }

    /// CONNECT (ibsim's `sim_ctl_new_client`): `c` becomes the answer.
    fn connect(self: &Arc<Server>, c: &mut Ctl) -> io::Result<()> {
        let mut info = wire::ClientInfo::decode(&c.data);
        let mut st = self.state();
        let node = if info.nodeid[0] == 0 {
            NodeIdx(0)
        } else {
            st.fabric.find(&info.node()).ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, "unknown node".to_string())
            })?
        };
        let at = (node, u8::from(!st.is_switch(node)));
        // Clients that went away without a DISCONNECT give their slots (and SM) back.
        for i in 0..st.slots.len() {
            if let Some(cl) = &st.slots[i].client {
                if !alive(&cl.peer) {
                    st.drop_client(i);
                }
            }
        }
        if info.issm != 0
            && st
                .slots
                .iter()
                .filter_map(|s| s.client.as_ref())
                .any(|cl| cl.issm && cl.at.0 == node)
        {
            return Err(io::Error::other("an SM is already attached to that node"));
        }
        let slot = match st.slots.iter().position(|s| s.client.is_none()) {
            Some(i) => i,
            None if st.slots.len() < wire::MAX_SLOTS => {
                let i = st.slots.len();
                let sock = UnixDatagram::bind_addr(&wire::abstract_addr(&wire::server_out(
                    &self.base, i as u32,
                ))?)?;
                sock.set_write_timeout(Some(SEND_WAIT))?;
                let slot = Slot {
                    sock: Arc::new(sock),
                    generation: Arc::new(AtomicU64::new(0)),
                    sending: Arc::new(Mutex::new(())),
                    client: None,
                };
                let server = Arc::clone(self);
                let sock = Arc::clone(&slot.sock);
                std::thread::Builder::new()
                    .name(format!("slot{i}"))
                    .spawn(move || server.serve_slot(i, &sock))?;
                st.slots.push(slot);
                i
            }
            None => return Err(io::Error::other("no free slot")),
        };
        let peer = wire::client_in(&self.base, info.id);
        {
            let s = &st.slots[slot];
            let _sending = lock(&s.sending);
            s.sock.connect_addr(&wire::abstract_addr(&peer)?)?;
            s.generation.fetch_add(1, Ordering::SeqCst);
        }
        st.slots[slot].client = Some(Client {
            id: info.id,
            peer,
            at,
            issm: info.issm != 0,
            qp: info.qp,
        });
        // As strncpy(nodeid, id, 31): byte 31 stays as it came.
        let name = st.fabric.node(node).spec.id.as_bytes();
        let n = name.len().min(31);
        info.nodeid[..31].fill(0);
        info.nodeid[..n].copy_from_slice(&name[..n]);
        info.id = slot as u32;
        info.encode_into(&mut c.data);
        Ok(())
    }

    /// A slot's data loop: each packet from the slot's client is answered on the slot's
    /// socket (or forwarded to an SM client's), at once or, when a fault delays it, by the
    /// timer; a duplicated answer is sent twice. The fabric's lock is held only to compute
    /// the answer, never across socket I/O.
    fn serve_slot(&self, slot: usize, sock: &UnixDatagram) {
        let mut buf = [0u8; 512];
        loop {
            let (n, from) = match sock.recv_from(&mut buf) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            // The packet to send, where (the slot, its socket, generation and lock; if a
            // forward fails, the sender gets it back with status 110), its fate, and the
            // traps the packet made the fabric raise (a Set that took a link down), routed.
            let (reply, to, fate, traps) = {
                let mut st = self.state();
                let Some(client) = st.slots[slot].client.clone() else {
                    continue;
                };
                // What an earlier client of the slot left queued is not this one's.
                if !wire::is_addr_of(&from, &client.peer) {
                    continue;
                }
                self.packets.fetch_add(1, Ordering::Relaxed);
                let done = st.process(slot as u16, &client, &buf[..n]);
                let traps = if st.fabric.has_traps() {
                    let (traps, undelivered) = st.route_traps();
                    (traps, undelivered.len())
                } else {
                    (Vec::new(), 0)
                };
                match done {
                    Some((reply, dest, fate)) => {
                        let mut to = vec![st.target(dest)];
                        if dest != slot {
                            to.push(st.target(slot));
                        }
                        (Some(reply), to, fate, traps)
                    }
                    None => (None, Vec::new(), PLAIN, traps),
                }
            };
            // The answer first: the SM's Set is answered before its trap arrives.
            let Some(reply) = reply else {
                self.send_traps(traps.0, traps.1);
                continue;
            };
            if fate.delay_ns == 0 {
                for _ in 0..fate.copies.max(1) {
                    self.send_out(&to, reply);
                }
            } else {
                let due = Instant::now() + Duration::from_nanos(fate.delay_ns);
                for _ in 0..fate.copies.max(1) {
                    self.timer.schedule(due, to.clone(), reply);
                }
            }
            self.send_traps(traps.0, traps.1);
        }
    }

    /// Sends `pkt` to the first of `to` that takes it: the next ones get it with status 110
    /// (the sender of a forward that failed).
    fn send_out(&self, to: &[Target], mut pkt: [u8; wire::PACKET_LEN]) {
        for (k, t) in to.iter().enumerate() {
            if k > 0 {
                // sim_request.status, big-endian.
                pkt[16..20].copy_from_slice(&wire::STATUS_DROPPED.to_be_bytes());
            }
            match self.send_to(t, &pkt) {
                Sent::Done | Sent::Stale => break,
                Sent::Full | Sent::Gone => {}
            }
        }
    }

    /// Sends `pkt` on `t`'s socket, if the slot still has the client it had.
    fn send_to(&self, t: &Target, pkt: &[u8]) -> Sent {
        let sent = {
            let _sending = lock(&t.sending);
            if t.generation.load(Ordering::SeqCst) != t.gen {
                return Sent::Stale;
            }
            t.sock.send(pkt)
        };
        match sent {
            Ok(_) => Sent::Done,
            // Not reading: the packet is lost, as a full queue loses it.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Sent::Full
            }
            // Gone (ibsim: "client seems to be dead - disconnecting").
            Err(_) => {
                let mut st = self.state();
                if t.generation.load(Ordering::SeqCst) == t.gen
                    && st.slots[t.slot]
                        .client
                        .as_ref()
                        .is_some_and(|c| c.id == t.id)
                {
                    st.drop_client(t.slot);
                }
                Sent::Gone
            }
        }
    }

    /// The timer's loop: sends each late packet when it falls due (sleeping until the next
    /// one, or until one is queued).
    fn serve_timer(&self) {
        let mut q = lock(&self.timer.queue);
        loop {
            let now = Instant::now();
            let next = q.heap.peek().map(|Reverse(l)| l.due);
            match next {
                None => {
                    q = self
                        .timer
                        .wake
                        .wait(q)
                        .unwrap_or_else(PoisonError::into_inner)
                }
                Some(due) if due > now => {
                    q = match self.timer.wake.wait_timeout(q, due - now) {
                        Ok((g, _)) => g,
                        Err(e) => e.into_inner().0,
                    };
                }
                Some(_) => {
                    if let Some(Reverse(late)) = q.heap.pop() {
                        drop(q);
                        self.send_out(&late.to, *late.pkt);
                        q = lock(&self.timer.queue);
                    }
                }
            }
        }
    }
}

/// Where a packet goes: a slot's socket, as the slot was when the packet was made.
#[derive(Debug, Clone)]
struct Target {
    slot: usize,
    sock: Arc<UnixDatagram>,
    generation: Arc<AtomicU64>,
    sending: Arc<Mutex<()>>,
    /// The slot's generation then: a later client of the slot does not get it.
    gen: u64,
    /// The id of the slot's client then.
    id: u32,
}

/// What became of a send.
enum Sent {
    /// Sent.
    Done,
    /// The slot has another client now: not sent.
    Stale,
    /// The client's queue stayed full: lost.
    Full,
    /// The client is gone (and was dropped).
    Gone,
}

/// A packet a fault delays, due at `due`.
#[derive(Debug)]
struct Late {
    due: Instant,
    seq: u64,
    to: Vec<Target>,
    pkt: Box<[u8; wire::PACKET_LEN]>,
}

impl PartialEq for Late {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Late {}
impl PartialOrd for Late {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Late {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

#[derive(Debug, Default)]
struct LateQueue {
    seq: u64,
    heap: BinaryHeap<Reverse<Late>>,
}

/// Late answers, sent by the timer thread when due.
#[derive(Debug, Default)]
struct Timer {
    queue: Mutex<LateQueue>,
    wake: Condvar,
}

impl Timer {
    fn schedule(&self, due: Instant, to: Vec<Target>, pkt: [u8; wire::PACKET_LEN]) {
        let mut q = lock(&self.queue);
        q.seq += 1;
        let seq = q.seq;
        q.heap.push(Reverse(Late {
            due,
            seq,
            to,
            pkt: Box::new(pkt),
        }));
        drop(q);
        self.wake.notify_one();
    }

    fn len(&self) -> usize {
        lock(&self.queue).heap.len()
    }
}

impl State {
    /// Where a packet for slot `i` goes, as the slot is now.
    fn target(&self, i: usize) -> Target {
        let s = &self.slots[i];
        Target {
            slot: i,
            sock: Arc::clone(&s.sock),
            generation: Arc::clone(&s.generation),
            sending: Arc::clone(&s.sending),
            gen: s.generation.load(Ordering::SeqCst),
            id: s.client.as_ref().map_or(0, |c| c.id),
        }
    }
}

impl State {
    /// One packet of `client` in slot `slot` (ibsim's `process_packet`): the packet to send
    /// and the slot to send it to (the sender's for an answer or a bounce, an SM client's
    /// for what it answers), or `None` for a packet ibsim discards without one.
    fn process(
        &mut self,
        slot: u16,
        client: &Client,
        pkt: &[u8],
    ) -> Option<([u8; wire::PACKET_LEN], usize, Fate)> {
        let mut r = Request::decode(pkt)?;
        let mad = &mut r.mad;
        let (base_version, class, class_version, method) = (mad[0], mad[1], mad[2], mad[3]);
        let response = method & 0x80 != 0;
        if class_version > 2 || base_version != 1 {
            return None;
        }
        let directed = class == 0x81;
        if directed {
            // Hop pointer 0, and the direction bit saying what the method says.
            if mad[5] != 0 || (mad[4] & 0x80 != 0) != response {
                return None;
            }
        } else if r.slid == 0 {
            r.slid = self.fabric.node(client.at.0).lid_of(client.at.1);
        }
        if !response {
            wire::stamp_tid(mad, slot);
        }
        if directed && (mad[32..36] != [0xff; 4]) {
            // DrSLID and DrDLID: LID-routed parts ibsim does not route.
            return None;
        }
        if method == 0x07 {
            // TrapRepress: dropped.
            return None;
        }
        let me = usize::from(slot);
        if response {
            // An SM client's answer: to the client its TID names, if it routes to that
            // client's port; forwarded unchanged.
            let dest = match self.fabric.route_response(client.at, r.dlid, &r.mad) {
                // Lost by a fault: no answer at all (the requester times out).
                Err(Dropped::Lost { .. } | Dropped::Dead { .. }) => return None,
                Err(_) => None,
                Ok(at) => self.find_client(at, true, r.dqp, wire::tid_slot(&r.mad)),
            };
            return Some(match dest {
                Some(d) => (r.encode(), d, PLAIN),
                None => {
                    r.status = wire::STATUS_DROPPED;
                    (r.encode(), me, PLAIN)
                }
            });
        }
        let mut fate = PLAIN;
        match self.fabric.deliver(client.at, r.dlid, r.dqp, &r.mad) {
            Ok(reply) => {
                r.mad = reply.mad;
                std::mem::swap(&mut r.dlid, &mut r.slid);
                std::mem::swap(&mut r.dqp, &mut r.sqp);
                r.status = 0;
                fate = reply.fate;
            }
            // Nothing in the fabric answers it: the SM client where it arrived gets it as it
            // came (SLID filled in, TID stamped), addresses and QPs unswapped.
            Err(Dropped::NoAgent { at, port }) => {
                if let Some(d) = self.find_client((at, port), false, r.dqp, 0) {
                    return Some((r.encode(), d, PLAIN));
                }
                r.status = wire::STATUS_DROPPED;
            }
            // Lost on a link or into a dead node by a seeded fault: no answer at all, as
            // on a fabric (the sender times out; ibsim's error rates bounce it instead).
            Err(Dropped::Lost { .. } | Dropped::Dead { .. }) => return None,
            Err(_) => r.status = wire::STATUS_DROPPED,
        }
        Some((r.encode(), me, fate))
    }
}

/// Notes the items of an applied fault spec for `status`: `clear` forgets those before it
/// (but the seed, which `clear` keeps).
fn note_fault_items(items: &mut Vec<String>, spec: &str) {
    for item in spec.split([',', '\n']).map(str::trim) {
        if item.is_empty() {
            continue;
        }
        if item == "clear" {
            items.retain(|i| i.starts_with("seed="));
        } else {
            items.push(item.to_string());
        }
    }
}

/// A port's states as `PhysicalState/PortState`.
fn states((phys, state): (ibmad::PhysPortState, ibmad::PortState)) -> String {
    format!("{phys}/{state}")
}

impl State {
    /// The node a control command names, or what to do about it.
    fn node_named(&self, name: &str) -> Result<NodeIdx, String> {
        self.fabric.find(name).ok_or_else(|| {
            let ids: Vec<&str> = self
                .fabric
                .nodes()
                .iter()
                .take(6)
                .map(|n| n.spec.id.as_str())
                .collect();
            let more = if self.fabric.len() > ids.len() {
                ", ..."
            } else {
                ""
            };
            format!(
                "no node has the id or NodeDescription {name:?} (ids here: {}{more})",
                ids.join(", ")
            )
        })
    }

    /// A node's id and port, for messages.
    fn port_name(&self, (node, port): (NodeIdx, u8)) -> String {
        format!("{} port {port}", self.fabric.node(node).spec.id)
    }

    /// The port a control command names on `node`, or why there is none.
    fn port_named(&self, node: NodeIdx, port: u8) -> Result<(NodeIdx, u8), String> {
        let n = self.fabric.node(node);
        if self.fabric.has_port((node, port)) {
            return Ok((node, port));
        }
        let first = u8::from(!n.is_switch());
        Err(format!(
            "{} has no port {port} (its ports are {first}-{})",
            n.spec.id, n.spec.num_ports
        ))
    }

    /// The traps the fabric raised, routed: the packets to send and to whom, and how many
    /// found no SM client (no route to the SM LID, lost, or no SM attached there).
    fn route_traps(&mut self) -> (Vec<(Target, [u8; wire::PACKET_LEN])>, Vec<String>) {
        let mut out = Vec::new();
        let mut undelivered = Vec::new();
        for trap in self.fabric.take_traps() {
            let who = self.port_name(trap.from);
            let dest = match self.fabric.route_trap(&trap) {
                Ok(at) => self.find_client(at, false, 0, 0).ok_or_else(|| {
                    format!(
                        "trap {} from {who} to LID {}: no SM client at {}",
                        trap.number,
                        trap.dlid,
                        self.port_name(at)
                    )
                }),
                Err(e) => Err(format!(
                    "trap {} from {who} to LID {}: {}",
                    trap.number,
                    trap.dlid,
                    match e {
                        Dropped::Lost { .. } => "lost by a fault",
                        Dropped::Dead { .. } => "into a dead node",
                        _ => "no route (links down or no LFT entry)",
                    }
                )),
            };
            match dest {
                Ok(slot) => {
                    let r = Request {
                        dlid: trap.dlid,
                        slid: trap.slid,
                        dqp: 0,
                        sqp: 0,
                        status: 0,
                        length: wire::MAX_MAD as u64,
                        mad: trap.mad,
                    };
                    out.push((self.target(slot), r.encode()));
                }
                Err(why) => undelivered.push(why),
            }
        }
        (out, undelivered)
    }
}

impl Server {
    /// Sends routed traps (outside the fabric's lock), counting them.
    fn send_traps(&self, traps: Vec<(Target, [u8; wire::PACKET_LEN])>, undelivered: usize) {
        self.traps_undelivered
            .fetch_add(undelivered as u64, Ordering::Relaxed);
        for (to, pkt) in traps {
            match self.send_to(&to, &pkt) {
                Sent::Done => self.traps_sent.fetch_add(1, Ordering::Relaxed),
                _ => self.traps_undelivered.fetch_add(1, Ordering::Relaxed),
            };
        }
    }

    /// The control interface's loop (`umad sim ctl`): one answer per request.
    fn serve_console(self: &Arc<Server>) {
        let mut buf = vec![0u8; crate::sim_ctl::MAX_DATAGRAM];
        loop {
            let (n, from) = match self.console.recv_from(&mut buf) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let Some(words) = crate::sim_ctl::decode_request(&buf[..n]) else {
                let answer = crate::sim_ctl::encode_answer(
                    false,
                    "not a umad sim ctl request (use umad sim ctl)\n",
                );
                let _ = self.console.send_to_addr(&answer, &from);
                continue;
            };
            let (ok, text, quit) = match crate::sim_ctl::CtlCommand::parse(&words) {
                Ok(cmd) => match self.console_command(&cmd) {
                    Ok(text) => (true, text, cmd == crate::sim_ctl::CtlCommand::Quit),
                    Err(e) => (false, format!("{e}\n"), false),
                },
                Err(e) => (false, format!("{e}\n"), false),
            };
            // A client that went away before the answer: nothing to do.
            let _ = self
                .console
                .send_to_addr(&crate::sim_ctl::encode_answer(ok, &text), &from);
            if quit {
                println!("umad sim serve: quit (umad sim ctl)");
                let _ = io::stdout().flush();
                std::process::exit(exit::OK);
            }
        }
    }

    /// Carries out one control command: the answer's text, or what went wrong.
    fn console_command(&self, cmd: &crate::sim_ctl::CtlCommand) -> Result<String, String> {
        use crate::sim_ctl::{CtlCommand, COUNTER_FIELDS, HELP};
        match cmd {
            CtlCommand::Help => Ok(HELP.to_string()),
            CtlCommand::Quit => Ok("stopping\n".to_string()),
            CtlCommand::Status => Ok(self.status()),
            CtlCommand::Link { node, port, up } => {
                let (text, traps, undelivered) = {
                    let mut st = self.state();
                    let node = st.node_named(node)?;
                    let at = st.port_named(node, *port)?;
                    let c = st.fabric.set_link(at, *up).map_err(|e| match e {
                        ibnetsim::LinkError::Port0 => format!(
                            "{}: port 0 is the switch itself, it has no link (ports 1-{})",
                            st.port_name(at),
                            st.fabric.node(node).spec.num_ports
                        ),
                        ibnetsim::LinkError::NoPort => {
                            format!("{}: no such port", st.port_name(at))
                        }
                    })?;
                    let mut text = format!(
                        "{}: {} -> {}\n",
                        st.port_name(at),
                        states(c.before),
                        states(c.after)
                    );
                    match (c.far, c.far_before, c.far_after) {
                        (Some(far), Some(b), Some(a)) => {
                            text += &format!(
                                "far end {}: {} -> {}\n",
                                st.port_name(far),
                                states(b),
                                states(a)
                            );
                            if *up && a.0 == ibmad::PhysPortState::Disabled {
                                text += &format!(
                                    "the far end is Disabled: bring it up too (link {} {} up)\n",
                                    st.fabric.node(far.0).spec.id,
                                    far.1
                                );
                            }
                        }
                        _ => text += "not linked: nothing at the far end\n",
                    }
                    let (traps, undelivered) = st.route_traps();
                    (text, traps, undelivered)
                };
                let mut text = text;
                let sent = traps.len();
                for why in &undelivered {
                    text += &format!("{why}\n");
                }
                self.send_traps(traps, undelivered.len());
                text += &format!("traps sent: {sent}\n");
                Ok(text)
            }
            CtlCommand::Fault(spec) => {
                let mut st = self.state();
                st.fabric.apply_faults(spec).map_err(|e| e.to_string())?;
                note_fault_items(&mut st.fault_items, spec);
                Ok(format!("{}\n", st.faults_line()))
            }
            CtlCommand::Counters { node, port, ops } => {
                let mut st = self.state();
                let node = st.node_named(node)?;
                let at = st.port_named(node, *port)?;
                let name = st.port_name(at);
                let c = st
                    .fabric
                    .counters_mut(at)
                    .ok_or_else(|| format!("{name}: no such port"))?;
                for op in ops {
                    let f = counter_field(c, op.field);
                    *f = if op.add {
                        f.saturating_add(op.value)
                    } else {
                        op.value
                    };
                }
                let mut text = format!("{name}:\n");
                for (i, field) in COUNTER_FIELDS.iter().enumerate() {
                    text += &format!("  {field}: {}\n", counter_field(c, i));
                }
                Ok(text)
            }
            CtlCommand::Errors { node, port, n } => {
                let mut st = self.state();
                let node = st.node_named(node)?;
                let at = st.port_named(node, *port)?;
                let name = st.port_name(at);
                let c = st
                    .fabric
                    .counters_mut(at)
                    .ok_or_else(|| format!("{name}: no such port"))?;
                c.symbol_errors = c.symbol_errors.saturating_add(*n);
                c.rcv_errors = c.rcv_errors.saturating_add(*n);
                Ok(format!(
                    "{name}: SymbolErrorCounter {}, PortRcvErrors {}\n",
                    c.symbol_errors, c.rcv_errors
                ))
            }
        }
    }

    /// `status`: what the daemon holds.
    fn status(&self) -> String {
        let st = self.state();
        let f = &st.fabric;
        let switches = f.nodes().iter().filter(|n| n.is_switch()).count();
        let mut s = format!(
            "fabric: {} ({} nodes: {} switches, {} other)\n",
            self.fabric_name,
            f.len(),
            switches,
            f.len() - switches
        );
        s += &format!(
            "sockets: @{} (clients), @{} (control)\nup: {:.1} s; requests served: {}\n",
            wire::server_ctl(&self.base),
            crate::sim_ctl::console_name(&self.base),
            self.started.elapsed().as_secs_f64(),
            self.packets.load(Ordering::Relaxed)
        );
        let clients: Vec<(usize, &Client)> = st
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, sl)| sl.client.as_ref().map(|c| (i, c)))
            .collect();
        s += &format!("clients: {}\n", clients.len());
        for (i, c) in clients {
            s += &format!(
                "  slot {i}: id {} at {}{}{}\n",
                c.id as i32,
                st.port_name(c.at),
                if c.issm { ", SM" } else { "" },
                if c.qp > 1 {
                    format!(", QP {}", c.qp)
                } else {
                    String::new()
                }
            );
        }
        s += &format!("{}\n", st.faults_line());
        s += &format!(
            "late answers queued: {}\ntraps sent: {}, undelivered: {}\n",
            self.timer.len(),
            self.traps_sent.load(Ordering::Relaxed),
            self.traps_undelivered.load(Ordering::Relaxed)
        );
        s
    }
}

impl State {
    /// The faults, for `status` and `fault`.
    fn faults_line(&self) -> String {
        match self.fabric.faults() {
            Some(f) if f.is_active() => format!("faults: {}", self.fault_items.join(",")),
            Some(f) => format!("faults: none (seed {})", f.seed()),
            None => "faults: none".to_string(),
        }
    }
}

/// The counter [`crate::sim_ctl::COUNTER_FIELDS`]`[i]` names.
fn counter_field(c: &mut ibnetsim::pma::Counters, i: usize) -> &mut u64 {
    match i {
        0 => &mut c.symbol_errors,
        1 => &mut c.link_error_recovery,
        2 => &mut c.link_downed,
        3 => &mut c.rcv_errors,
        4 => &mut c.rcv_remote_physical_errors,
        5 => &mut c.rcv_switch_relay_errors,
        6 => &mut c.xmit_discards,
        7 => &mut c.xmit_constraint_errors,
        8 => &mut c.rcv_constraint_errors,
        9 => &mut c.local_link_integrity_errors,
        10 => &mut c.excessive_buffer_overrun_errors,
        11 => &mut c.vl15_dropped,
        12 => &mut c.xmit_data,
        13 => &mut c.rcv_data,
        14 => &mut c.xmit_pkts,
        15 => &mut c.rcv_pkts,
        _ => &mut c.xmit_wait,
    }
}
