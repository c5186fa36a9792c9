//! The kernel transport: `/dev/infiniband/umadN` through libc `open`/`ioctl`/`read`/`write`/`poll`.

use std::io;
use std::os::unix::io::RawFd;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use super::{deadline, poll_ms, Issm, Outgoing, Received, Transport};
use crate::abi::{hdr, HeaderLayout, ABI_VERSION, MAX_AGENTS};
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
    issm_path: PathBuf,
    agents: Mutex<u64>,
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
        let issm_path = devices.issm_device_path(&ca, port)?;
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
            issm_path,
            agents: Mutex::new(0),
        })
    }

    /// The user-MAD header layout this fd uses.
    pub fn header_layout(&self) -> HeaderLayout {
        self.layout
    }

    fn agents(&self) -> std::sync::MutexGuard<'_, u64> {
        self.agents.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn recv_err(&self, source: io::Error) -> Error {
        Error::Recv {
            ca: self.ca.clone(),
            port: self.port,
            source,
        }
    }

    /// One `read`: `Ok(None)` when nothing is queued, the whole message otherwise.
    fn read_one(&self) -> Result<Option<Received>> {
        let h = self.layout.len();
        let mut buf = vec![0u8; h + FIRST_READ];
        let n = loop {
            match sys::read(self.fd.raw(), &mut buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                    // The kernel copied the header; its length field is what the message needs.
                    let need = u32::from_ne_bytes(buf[hdr::LENGTH].try_into().unwrap_or_default())
                        as usize;
                    if need <= buf.len() {
                        return Err(self.recv_err(e));
                    }
                    buf.resize(need, 0);
                }
                Err(e) => return Err(self.recv_err(e)),
            }
        };
        if n < h {
            return Err(self.recv_err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("short read: {n} bytes, less than the {h}-byte header"),
            )));
        }
        let word = |r: std::ops::Range<usize>| {
            u32::from_ne_bytes([
                buf[r.start],
                buf[r.start + 1],
                buf[r.start + 2],
                buf[r.start + 3],
            ])
        };
        let agent = word(hdr::ID);
        let status = word(hdr::STATUS);
        let addr = MadAddr::parse(&buf, self.layout);
        buf.truncate(n);
        buf.drain(..h);
        Ok(Some(Received {
            agent,
            status,
            addr,
            mad: buf,
        }))
    }
}

impl Transport for KernelTransport {
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
        if agents.count_ones() as usize >= MAX_AGENTS {
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
        let mut req2 = spec.to_reg_req2();
        let id = match sys::register_agent2(self.fd.raw(), &mut req2) {
            Ok(()) => req2.id,
            // Old kernels (ENOTTY) and umad2sim (EINVAL) lack REGISTER_AGENT2: without flags the
            // legacy ioctl does the same job, as libibumad's umad_register2 falls back.
            Err(e)
                if spec.flags == 0
                    && matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOTTY)) =>
            {
                let mut req = spec.to_reg_req();
                sys::register_agent(self.fd.raw(), &mut req).map_err(err)?;
                req.id
            }
            Err(e) => return Err(err(e)),
        };
        if id < 64 {
            *agents |= 1 << id;
        }
        Ok(id)
    }

    fn unregister(&self, agent: AgentId) -> Result<()> {
        let mut agents = self.agents();
        if agent >= 64 || *agents & (1 << agent) == 0 {
            return Err(Error::BadAgent {
                ca: self.ca.clone(),
                port: self.port,
                agent,
            });
        }
        sys::unregister_agent(self.fd.raw(), agent).map_err(|source| Error::Register {
            ca: self.ca.clone(),
            port: self.port,
            class: 0,
            version: 0,
            source,
        })?;
        *agents &= !(1 << agent);
        Ok(())
    }

    fn send(&self, out: &Outgoing<'_>) -> Result<()> {
        let h = self.layout.len();
        let mut buf = vec![0u8; h + out.mad.len()];
        buf[hdr::ID].copy_from_slice(&out.agent.to_ne_bytes());
        buf[hdr::TIMEOUT_MS].copy_from_slice(&out.timeout_ms.to_ne_bytes());
        buf[hdr::RETRIES].copy_from_slice(&out.retries.to_ne_bytes());
        out.addr.emit(&mut buf, self.layout);
        buf[h..].copy_from_slice(out.mad);
        let err = |source| Error::Send {
            ca: self.ca.clone(),
            port: self.port,
            agent: out.agent,
            source,
        };
        match sys::write(self.fd.raw(), &buf) {
            Ok(n) if n == buf.len() => Ok(()),
            Ok(n) => Err(err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {n} of {} bytes", buf.len()),
            ))),
            Err(e) => Err(err(e)),
        }
    }

    fn recv(&self, timeout: Option<Duration>) -> Result<Option<Received>> {
        let until = deadline(timeout);
        loop {
            if timeout != Some(Duration::ZERO) && !self.poll_until(until)? {
                return Ok(None);
            }
            if let Some(r) = self.read_one()? {
                return Ok(Some(r));
            }
            // Readable but empty: another reader took it. Try again until the deadline.
            if until.is_some_and(|d| d <= std::time::Instant::now()) {
                return Ok(None);
            }
        }
    }

    fn poll(&self, timeout: Option<Duration>) -> Result<bool> {
        self.poll_until(deadline(timeout))
    }

    fn raw_fd(&self) -> RawFd {
        self.fd.raw()
    }

    fn issm(&self) -> Result<Issm> {
        let fd = sys::open_rw_nonblock(&self.issm_path).map_err(|source| Error::Open {
            ca: self.ca.clone(),
            port: self.port,
            path: self.issm_path.clone(),
            source,
        })?;
        Ok(Issm::new(Box::new(fd)))
    }
}

impl KernelTransport {
    fn poll_until(&self, until: Option<std::time::Instant>) -> Result<bool> {
        sys::poll_in(self.fd.raw(), poll_ms(until)).map_err(|e| self.recv_err(e))
    }
}

impl Drop for KernelTransport {
    fn drop(&mut self) {
        // The kernel drops agents on close; umad2sim does not (and then crashes on a late MAD
        // for them), so unregister explicitly first.
        let agents = *self.agents();
        for id in (0..64).filter(|i| agents & (1u64 << i) != 0) {
            let _ = sys::unregister_agent(self.fd.raw(), id);
        }
    }
}
