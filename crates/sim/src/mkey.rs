//! M_Key protection (IBA Vol 1, 14.2.4), as hardware checks it: an SMP whose M_Key does not
//! match the M_Key of the port it is checked at (a CA's port it arrived on, a switch's port
//! 0), where that M_Key is not 0, is refused by the protection level (PortInfo's
//! M_KeyProtectBits): level 0 lets a Get through, level 1 lets it through with PortInfo's
//! M_Key read as 0, levels 2 and 3 let nothing through; a Set never passes. A refused SMP
//! gets no answer (its sender times out) and counts in PortInfo.M_KeyViolations (stopping
//! at 0xffff). ibsim checks no M_Key.
//!
//! Not yet: the lease period (the protection bits dropping to 0 after M_KeyLeasePeriod
//! seconds without a matching M_Key needs a clock) and Trap 256 (Bad M_Key) to the SM.

use ibmad::{attr::id, Method, PortInfo, Smp, MAD_SIZE};

use crate::model::{Fabric, NodeIdx};
use crate::smi::Dropped;

/// What the M_Key check lets an SMP do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MKeyCheck {
    /// Answered as usual.
    Pass,
    /// A Get answered with PortInfo's M_Key field 0 (protection level 1).
    Hidden,
}

impl Fabric {
    /// Checks the M_Key of the SMP in `buf`, arrived at `at` through `in_port`.
    ///
    /// # Errors
    /// [`Dropped::MKey`] when the protection refuses it (counted in M_KeyViolations).
    pub(crate) fn check_m_key(
        &mut self,
        at: NodeIdx,
        in_port: u8,
        buf: &[u8; MAD_SIZE],
    ) -> Result<MKeyCheck, Dropped> {
        let port = if self.node(at).is_switch() {
            0
        } else {
            in_port
        };
        let Some(p) = self.node(at).port(port) else {
            return Ok(MKeyCheck::Pass);
        };
        let smp = Smp::new_unchecked(&buf[..]);
        if p.m_key == 0 || smp.m_key() == p.m_key {
            return Ok(MKeyCheck::Pass);
        }
        let read = smp.method() != Method::Set;
        let pass = match (read, p.m_key_protect_bits) {
            (true, 0) => Some(MKeyCheck::Pass),
            (true, 1) => Some(MKeyCheck::Hidden),
            _ => None,
        };
        pass.ok_or_else(|| {
            let p = &mut self.node_mut(at).ports[usize::from(port)];
            p.m_key_violations = p.m_key_violations.saturating_add(1);
            Dropped::MKey { at, port }
        })
    }
}

/// Hides the M_Key in the PortInfo answer in `buf`, if it is one (level 1 protection).
pub(crate) fn hide_m_key(buf: &mut [u8; MAD_SIZE]) {
    let smp = Smp::new_unchecked(&buf[..]);
    if smp.header().attr_id() != id::PORT_INFO {
        return;
    }
    if let Ok(mut pi) = PortInfo::parse(smp.data()) {
        pi.m_key = 0;
        pi.emit(Smp::new_unchecked(&mut buf[..]).data_mut());
    }
}

#[cfg(test)]
mod tests {
    use ibmad::{attr::id, DrPath, Method, PortInfo, Smp};

    use crate::{Dropped, Fabric, NodeIdx};

    const KEY: u64 = 0x0123_4567_89ab_cdef;

    /// The example fabric, configured; H-host1's port 1 with M_Key `KEY` at `level`.
    fn fabric(level: u8) -> (Fabric, (NodeIdx, u8)) {
        let mut f = Fabric::load(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fabrics/example.net"
        ))
        .unwrap();
        f.configure(None).unwrap();
        let host = (f.find("H-host1").unwrap(), 1);
        let p = &mut f.node_mut(host.0).ports[1];
        p.m_key = KEY;
        p.m_key_protect_bits = level;
        (f, host)
    }

    /// PortInfo of H-host1 asked by `method` from S-sw2's port 0 over 0,8,1 (sw1, host1)
    /// with M_Key `key`.
    fn ask(f: &mut Fabric, method: Method, key: u64) -> Result<PortInfo, Dropped> {
        let from = (f.find("S-sw2").unwrap(), 0);
        let mut req = Smp::dr_request(
            method,
            id::PORT_INFO,
            0,
            1,
            &DrPath::from_hops(&[8, 1]).unwrap(),
        );
        let mut smp = Smp::new_unchecked(&mut req[..]);
        smp.set_m_key(key);
        if method == Method::Set {
            // Set what Get says, unchanged states.
            let mut pi = PortInfo::parse(&[0u8; 64]).unwrap();
            pi.lid = 1;
            pi.master_sm_lid = 1;
            pi.emit(smp.data_mut());
        }
        let resp = f.smp(from, &req)?;
        Ok(PortInfo::parse(Smp::new_unchecked(&resp[..]).data()).unwrap())
    }

    fn violations(f: &Fabric, host: (NodeIdx, u8)) -> u16 {
        f.node(host.0).ports[1].m_key_violations
    }

    #[test]
    fn the_right_m_key_passes_at_every_level() {
        for level in 0..4 {
            let (mut f, host) = fabric(level);
            assert_eq!(ask(&mut f, Method::Get, KEY).unwrap().m_key, KEY);
            assert!(ask(&mut f, Method::Set, KEY).is_ok());
            assert_eq!(violations(&f, host), 0);
        }
    }

    #[test]
    fn a_wrong_m_key_gets_what_its_level_allows_and_counts() {
        let (mut f, host) = fabric(0);
        assert_eq!(
            ask(&mut f, Method::Get, 0).unwrap().m_key,
            KEY,
            "level 0: Get passes"
        );
        assert!(matches!(
            ask(&mut f, Method::Set, 0),
            Err(Dropped::MKey { port: 1, .. })
        ));
        assert_eq!(violations(&f, host), 1);
        let (mut f, host) = fabric(1);
        assert_eq!(
            ask(&mut f, Method::Get, 0).unwrap().m_key,
            0,
            "level 1: hidden"
        );
        assert!(ask(&mut f, Method::Set, 7).is_err());
        assert_eq!(violations(&f, host), 1);
        for level in [2, 3] {
            let (mut f, host) = fabric(level);
            assert!(ask(&mut f, Method::Get, 0).is_err(), "level {level}");
            assert!(ask(&mut f, Method::Set, 0).is_err(), "level {level}");
            assert_eq!(violations(&f, host), 2);
            // The counter is in PortInfo, read with the right key.
            assert_eq!(ask(&mut f, Method::Get, KEY).unwrap().m_key_violations, 2);
        }
        // M_Key 0 on the port: no protection.
        let (mut f, host) = fabric(3);
        f.node_mut(host.0).ports[1].m_key = 0;
        assert!(ask(&mut f, Method::Set, 99).is_ok());
    }
}
