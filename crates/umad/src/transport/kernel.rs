//! The kernel transport: `/dev/infiniband/umadN` through libc `open`/`ioctl`/`read`/`write`/`poll`.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::io::RawFd;
use std::sync::Mutex;
use std::time::Duration;

use super::{deadline, poll_ms, timeout_ms, Issm, Outgoing, Received, Transport, TransportKind};
use crate::abi::{self, HeaderLayout, UserMadHeader, ABI_VERSION, MAX_AGENTS};
use crate::addr::MadAddr;
use crate::agent::{AgentId, AgentSpec};
use crate::device::{Ca, Devices};
use crate::sys;
use crate::{Error, Result};

/// Room for the first receive: a header and one 256-byte MAD. Longer (RMPP) messages are
/// re-read whole after the kernel says `ENOSPC`.
const FIRST_READ: usize = 256;

/// A port opened through the kernel's `ib_umad` devices.
#[derive(Debug)]
pub struct KernelTransport {
    devices: Devices,
    fd: sys::Fd,
    ca: String,
    port: u32,
    layout: HeaderLayout,
    /// What each agent this fd registered was registered as (sends are checked against it).
    agents: Mutex<BTreeMap<AgentId, AgentSpec>>,
}

impl KernelTransport {
    /// Opens the umad device of `ca`/`port`, chosen as libibumad chooses (`None`/0 = the
    /// default CA / best port; `smi` = only ports with an SMI, as `umad_open_smi_port`).
    ///
    /// The header layout is decided per port: 64 bytes when the ABI is newer than 5 or
    /// `ENABLE_PKEY` succeeds, else 56. Under ibsim's umad2sim shim the shim's own layout wins
    /// (it follows the `umad_size()` of the libibumad loaded in the process).
    pub fn open(
        devices: &Devices,
        ca: Option<&str>,
        port: u32,
        smi: bool,
    ) -> Result<KernelTransport> {
        let abi = devices.abi_version()?;
        let (ca, port) = devices.resolve(ca, port, smi)?;
        let path = devices.umad_device_path(&ca, port)?;
        let fd = sys::open_rw_nonblock(&path).map_err(|source| Error::Open {
            ca: ca.clone(),
            port,
            path,
            source,
        })?;
        let mut layout = if abi > ABI_VERSION || sys::enable_pkey(fd.raw()).is_ok() {
            HeaderLayout::WithPkey
        } else {
            HeaderLayout::Old
        };
        if let Some(sim) = sys::umad2sim_header_size() {
            layout = HeaderLayout::from_len(sim).unwrap_or(HeaderLayout::Old);
        }
        Ok(KernelTransport {
            devices: devices.clone(),
            fd,
            ca,
            port,
            layout,
            agents: Mutex::new(BTreeMap::new()),
        })
    }

    /// The user-MAD header layout this fd uses.
    pub fn header_layout(&self) -> HeaderLayout {
        self.layout
    }

    fn agents(&self) -> std::sync::MutexGuard<'_, BTreeMap<AgentId, AgentSpec>> {
        self.agents.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn recv_err(&self, source: io::Error) -> Error {
        Error::Recv {
            ca: self.ca.clone(),
            port: self.port,
            source,
        }
    }

    /// One message off the fd into `into` (its MAD buffer reused): `Ok(false)` when nothing
    /// is queued.
    fn read_one(&self, capacity: usize, into: &mut Received) -> Result<bool> {
        let fd = self.fd.raw();
        match read_message_into(self.layout, capacity, into, |buf| sys::read(fd, buf)) {
            Ok(Read::Message(())) => Ok(true),
            Ok(Read::Empty) => Ok(false),
            Ok(Read::TooLong(needed)) => Err(Error::TooLong {
                ca: self.ca.clone(),
                port: self.port,
                needed,
                capacity,
            }),
            Err(e) => Err(self.recv_err(e)),
        }
    }
}

/// What one [`read_message`] found.
#[derive(Debug)]
enum Read<T = Received> {
    Message(T),
    /// Nothing queued.
    Empty,
    /// The next MAD needs this many bytes, more than the capacity; it stays queued.
    TooLong(usize),
}

/// Reads one message with `read` (one `read(2)` per call) the way the kernel wants it read:
/// first into room for a header and `capacity` MAD bytes (at most one MAD when `capacity` is
/// unbounded); when the kernel answers `ENOSPC` (an RMPP message longer than that), it has
/// copied the header, whose `length` field tells the size needed, and the message stays
/// queued — so grow the buffer and read it again, whole, unless that exceeds `capacity`.
/// `Empty` when nothing is queued (`EAGAIN`, or umad2sim's `-EWOULDBLOCK`).
#[cfg(test)]
fn read_message(
    layout: HeaderLayout,
    capacity: usize,
    read: impl FnMut(&mut [u8]) -> io::Result<usize>,
) -> io::Result<Read> {
    let mut r = Received::default();
    Ok(match read_message_into(layout, capacity, &mut r, read)? {
        Read::Message(()) => Read::Message(r),
        Read::Empty => Read::Empty,
        Read::TooLong(n) => Read::TooLong(n),
    })
}

/// [`read_message`] into `into`, whose MAD buffer is reused: no allocation once it has room.
fn read_message_into(
    layout: HeaderLayout,
    capacity: usize,
    into: &mut Received,
    mut read: impl FnMut(&mut [u8]) -> io::Result<usize>,
) -> io::Result<Read<()>> {
    let h = layout.header_len();
    // The first read goes to the stack (room for one MAD); only a longer RMPP message, after
    // ENOSPC, is read into the caller's buffer.
    let mut first = [0u8; abi::HDR_LEN + FIRST_READ];
    let first_len = h + capacity.min(FIRST_READ);
    let mut long = false;
    let n = loop {
        let buf: &mut [u8] = if long {
            &mut into.mad[..]
        } else {
            &mut first[..first_len]
        };
        match read(buf) {
            Ok(n) => break n.min(buf.len()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Read::Empty),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                let need = UserMadHeader::from_prefix(buf, layout).length() as usize;
                if need <= buf.len() {
                    // The kernel's size is no bigger than what it refused: don't loop forever.
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("kernel said ENOSPC but asks for {need} bytes, no more than the {} offered", buf.len()),
                    ));
                }
                if need - h > capacity {
                    return Ok(Read::TooLong(need - h));
                }
                into.mad.clear();
                into.mad.resize(need, 0);
                long = true;
            }
            Err(e) => return Err(e),
        }
    };
    let buf: &[u8] = if long { &into.mad[..n] } else { &first[..n] };
    if n < h {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("short read: {n} bytes, less than the {h}-byte header"),
        ));
    }
    let view = UserMadHeader::new_checked(buf, layout)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let (agent, status) = (view.agent_id(), view.status());
    let addr = MadAddr::parse(&view.addr());
    if long {
        into.mad.truncate(n);
        into.mad.drain(..h);
    } else {
        into.mad.clear();
        into.mad.extend_from_slice(&first[h..n]);
    }
    into.agent = agent;
    into.status = status;
    into.addr = addr;
    Ok(Read::Message(()))
}

impl Transport for KernelTransport {
    fn kind(&self) -> TransportKind {
        TransportKind::Kernel
    }
    fn ca_name(&self) -> &str {
        &self.ca
    }

    fn port_num(&self) -> u32 {
        self.port
    }

    fn ca(&self) -> Result<Ca> {
        self.devices.ca(&self.ca)
    }

    fn register(&self, spec: &AgentSpec) -> Result<AgentId> {
        spec.validate()?;
        let mut agents = self.agents();
        if agents.len() >= MAX_AGENTS {
            return Err(Error::TooManyAgents {
                ca: self.ca.clone(),
                port: self.port,
                max: MAX_AGENTS,
            });
        }
        let err = |source: io::Error| {
            if source.raw_os_error() == Some(libc::ENOMEM) {
                Error::TooManyAgents {
                    ca: self.ca.clone(),
                    port: self.port,
                    max: MAX_AGENTS,
                }
            } else {
                Error::Register {
                    ca: self.ca.clone(),
                    port: self.port,
                    class: spec.class,
                    version: spec.class_version,
                    source,
                }
            }
        };
        // Old kernels (ENOTTY) and umad2sim (EINVAL) lack REGISTER_AGENT2: without flags the
        // legacy ioctl does the same job, as libibumad's umad_register2 falls back.
        let fd = self.fd.raw();
        let (id, _) = abi::register_agent(
            &spec.registration(),
            |req2| sys::register_agent2(fd, req2),
            |req| sys::register_agent(fd, req),
        )
        .map_err(|f| err(f.error))?;
        agents.insert(id, *spec);
        Ok(id)
    }

    fn unregister(&self, agent: AgentId) -> Result<()> {
        let mut agents = self.agents();
        if !agents.contains_key(&agent) {
            return Err(self.bad_agent(agent));
        }
        sys::unregister_agent(self.fd.raw(), agent).map_err(|source| Error::Register {
            ca: self.ca.clone(),
            port: self.port,
            class: 0,
            version: 0,
            source,
        })?;
        agents.remove(&agent);
        Ok(())
    }

    /// Refuses, before anything is written, what every transport refuses: an agent this port
    /// did not register ([`Error::BadAgent`]) and a MAD its agent may not send
    /// ([`AgentSpec::check_send`]: the kernel itself would only say `EINVAL`).
    fn send(&self, out: &Outgoing<'_>) -> Result<()> {
        let spec = self.agents().get(&out.agent).copied();
        spec.ok_or_else(|| self.bad_agent(out.agent))?
            .check_send(out.mad)?;
        // One MAD (the common case) is built on the stack; only a longer RMPP message
        // allocates.
        let len = self.layout.header_len() + out.mad.len();
        let mut small = [0u8; abi::HDR_LEN + ibmad::MAD_SIZE];
        let mut long = Vec::new();
        let buf: &mut [u8] = if len <= small.len() {
            &mut small[..len]
        } else {
            long.resize(len, 0);
            &mut long
        };
        let mut view = UserMadHeader::new_checked(&mut *buf, self.layout)?;
        view.set_agent_id(out.agent);
        view.set_timeout_ms(out.timeout_ms);
        view.set_retries(out.retries);
        out.addr.emit(&mut view.addr_mut());
        view.mad_mut().copy_from_slice(out.mad);
        let err = |source| Error::Send {
            ca: self.ca.clone(),
            port: self.port,
            agent: out.agent,
            source,
        };
        match sys::write(self.fd.raw(), buf) {
            Ok(n) if n == buf.len() => Ok(()),
            Ok(n) => Err(err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {n} of {} bytes", buf.len()),
            ))),
            Err(e) => Err(err(e)),
        }
    }

    fn recv_into(
        &self,
        timeout: Option<Duration>,
        capacity: usize,
        into: &mut Received,
    ) -> Result<bool> {
        let until = deadline(timeout);
        // The first poll waits the whole timeout (no second clock reading); a retry, the
        // time left.
        let mut wait_ms = timeout_ms(timeout);
        loop {
            if timeout != Some(Duration::ZERO) && !self.poll_for(wait_ms)? {
                return Ok(false);
            }
            if self.read_one(capacity, into)? {
                return Ok(true);
            }
            // Readable but empty: another reader took it. Try again until the deadline.
            if until.is_some_and(|d| d <= std::time::Instant::now()) {
                return Ok(false);
            }
            wait_ms = poll_ms(until);
        }
    }

    fn poll(&self, timeout: Option<Duration>) -> Result<bool> {
        self.poll_until(deadline(timeout))
    }

    fn raw_fd(&self) -> RawFd {
        self.fd.raw()
    }

    fn issm(&self) -> Result<Issm> {
        let path = self.devices.issm_device_path(&self.ca, self.port)?;
        let fd = sys::open_rw_nonblock(&path).map_err(|source| Error::Open {
            ca: self.ca.clone(),
            port: self.port,
            path,
            source,
        })?;
        Ok(Issm::new(Box::new(fd)))
    }
}

impl KernelTransport {
    fn bad_agent(&self, agent: AgentId) -> Error {
        Error::BadAgent {
            ca: self.ca.clone(),
            port: self.port,
            agent,
        }
    }

    fn poll_until(&self, until: Option<std::time::Instant>) -> Result<bool> {
        self.poll_for(poll_ms(until))
    }

    fn poll_for(&self, ms: libc::c_int) -> Result<bool> {
        sys::poll_in(self.fd.raw(), ms).map_err(|e| self.recv_err(e))
    }
}

impl Drop for KernelTransport {
    fn drop(&mut self) {
        // The kernel drops agents on close; umad2sim does not (and then crashes on a late MAD
        // for them), so unregister explicitly first.
        let agents = std::mem::take(&mut *self.agents());
        for id in agents.into_keys() {
            let _ = sys::unregister_agent(self.fd.raw(), id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::MethodMask;

    /// A transport whose "device" is `/dev/null` (every write succeeds), with agents entered
    /// as if registered: the send checks run exactly as on a umad device.
    fn null_transport(agents: &[(AgentId, AgentSpec)]) -> KernelTransport {
        let fd = sys::open_rw_nonblock(std::path::Path::new("/dev/null")).expect("/dev/null");
        KernelTransport {
            devices: Devices::new(),
            fd,
            ca: "mlx5_0".into(),
            port: 1,
            layout: HeaderLayout::WithPkey,
            agents: Mutex::new(agents.iter().copied().collect()),
        }
    }

    fn out(agent: AgentId, mad: &[u8]) -> Outgoing<'_> {
        Outgoing {
            agent,
            mad,
            addr: MadAddr::gsi(1),
            timeout_ms: 100,
            retries: 1,
        }
    }

    #[test]
    fn send_refuses_what_every_transport_refuses() {
        let sa = AgentSpec::new(0x03, 2).rmpp_version(1);
        let perf = AgentSpec::new(0x04, 1).methods(MethodMask::of(&[1]));
        let t = null_transport(&[(0, perf), (5, sa)]);
        let mut mad = vec![0u8; 1000];
        mad[..4].copy_from_slice(&[1, 0x03, 2, 0x12]);
        // An agent this port did not register.
        let e = t.send(&out(1, &mad[..256])).unwrap_err();
        assert!(matches!(e, Error::BadAgent { agent: 1, .. }), "{e:?}");
        assert!(matches!(t.unregister(1), Err(Error::BadAgent { .. })));
        // Shorter than the common header, on any agent.
        let e = t.send(&out(0, &mad[..20])).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        // Longer than one MAD: only for an RMPP agent, only when the MAD is RMPP-ACTIVE.
        let e = t.send(&out(0, &mad)).unwrap_err();
        assert!(e.to_string().contains("rmpp_version(1)"), "{e}");
        let e = t.send(&out(5, &mad)).unwrap_err();
        assert!(e.to_string().contains("ACTIVE"), "{e}");
        mad[24] = 1; // RMPP version 1
        mad[25] = 1; // DATA
        mad[26] = 0x01 | 0x02; // ACTIVE | FIRST
        t.send(&out(5, &mad))
            .expect("an RMPP-active SA message of any length");
        t.send(&out(0, &mad[..256])).expect("one MAD");
        t.send(&out(5, &mad[..36]))
            .expect("the common and RMPP headers");
        let e = t.send(&out(5, &mad[..35])).unwrap_err();
        assert!(e.to_string().contains("at least 36 bytes"), "{e}");
    }

    /// A fake device queue holding one message of `mad_len` bytes behind a `layout` header,
    /// refusing short buffers the way the kernel does for RMPP messages.
    fn fake_kernel(
        layout: HeaderLayout,
        mad_len: usize,
    ) -> (Vec<u8>, impl FnMut(&mut [u8]) -> io::Result<usize>) {
        let h = layout.header_len();
        let mut msg = vec![0u8; h + mad_len];
        let mut view = UserMadHeader::new_checked(&mut msg[..], layout).unwrap();
        view.set_agent_id(3);
        view.set_length((h + mad_len) as u32);
        view.addr_mut().set_lid(0x1234);
        for (i, b) in view.mad_mut().iter_mut().enumerate() {
            *b = i as u8;
        }
        let queued = msg.clone();
        let mut calls = 0;
        let read = move |buf: &mut [u8]| {
            calls += 1;
            assert!(calls <= 2, "re-read more than once");
            if buf.len() < queued.len() {
                buf[..h].copy_from_slice(&queued[..h]);
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            buf[..queued.len()].copy_from_slice(&queued);
            Ok(queued.len())
        };
        (msg, read)
    }

    #[test]
    fn a_long_message_is_reread_whole_after_enospc() {
        for layout in [HeaderLayout::Old, HeaderLayout::WithPkey] {
            let (msg, read) = fake_kernel(layout, 5000);
            let Read::Message(r) = read_message(layout, usize::MAX, read).unwrap() else {
                panic!("no message")
            };
            assert_eq!(r.agent, 3);
            assert_eq!(r.addr.lid, 0x1234);
            assert_eq!(r.mad.len(), 5000);
            assert_eq!(&r.mad[..], &msg[layout.header_len()..]);
        }
    }

    #[test]
    fn a_short_message_needs_one_read() {
        let (msg, read) = fake_kernel(HeaderLayout::WithPkey, 256);
        let Read::Message(r) = read_message(HeaderLayout::WithPkey, usize::MAX, read).unwrap()
        else {
            panic!("no message")
        };
        assert_eq!(&r.mad[..], &msg[64..]);
    }

    #[test]
    fn a_message_longer_than_the_capacity_stays_queued() {
        let (_, read) = fake_kernel(HeaderLayout::WithPkey, 5000);
        let r = read_message(HeaderLayout::WithPkey, 1000, read).unwrap();
        assert!(matches!(r, Read::TooLong(5000)), "{r:?}");
        let (msg, read) = fake_kernel(HeaderLayout::Old, 300);
        let Read::Message(r) = read_message(HeaderLayout::Old, 300, read).unwrap() else {
            panic!("no message")
        };
        assert_eq!(&r.mad[..], &msg[56..]);
    }

    #[test]
    fn empty_queue_and_bad_answers() {
        let r = read_message(HeaderLayout::Old, usize::MAX, |_| {
            Err(io::Error::from_raw_os_error(libc::EAGAIN))
        })
        .unwrap();
        assert!(matches!(r, Read::Empty));
        let e = read_message(HeaderLayout::Old, usize::MAX, |_| Ok(10)).unwrap_err();
        assert!(e.to_string().contains("short read"), "{e}");
        // ENOSPC without a bigger length in the header is an error, not an endless loop.
        let e = read_message(HeaderLayout::Old, usize::MAX, |_| {
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        })
        .unwrap_err();
        assert!(e.to_string().contains("ENOSPC"), "{e}");
        let e = read_message(HeaderLayout::Old, usize::MAX, |_| {
            Err(io::Error::from_raw_os_error(libc::EIO))
        })
        .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
    }
}
