//! The address of a MAD: where a send goes, where a received MAD came from.

use crate::abi::MadAddrView;

/// A Global Route Header, with every field in host order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Grh {
    /// Remote GID, as its 16 wire bytes (network order).
    pub gid: [u8; 16],
    /// Local SGID table index.
    pub gid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits), host order.
    pub flow_label: u32,
}

impl Grh {
    /// A GRH from values already in network byte order, as they sit in an `ib_mad_addr_t`:
    /// the flow label is converted to host order, everything else is taken as is.
    ///
    /// This is what the C header's `umad_set_grh_net` promised and never implemented.
    #[doc(alias = "umad_set_grh_net")]
    pub fn from_net(
        gid: [u8; 16],
        gid_index: u8,
        hop_limit: u8,
        traffic_class: u8,
        flow_label_be: u32,
    ) -> Grh {
        Grh {
            gid,
            gid_index,
            hop_limit,
            traffic_class,
            flow_label: u32::from_be(flow_label_be),
        }
    }
}

/// Destination (on send) or source (on receive) of a MAD: the `ib_mad_addr_t` of libibumad,
/// with every field in host order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[doc(alias = "ib_mad_addr_t")]
pub struct MadAddr {
    /// Remote LID (0xffff, the permissive LID, for directed-route SMPs).
    pub lid: u16,
    /// Remote QP number: 0 for SMPs, 1 for GSI classes (or a redirected QP).
    pub qpn: u32,
    /// Q_Key (GSI); [`MadAddr::DEFAULT_QKEY`] for QP1.
    pub qkey: u32,
    /// Service level.
    pub sl: u8,
    /// Source path bits (low LMC bits of the source LID).
    pub path_bits: u8,
    /// Global route header, when the destination is routed by GID.
    pub grh: Option<Grh>,
    /// P_Key table index to send with (needs the 64-byte header layout).
    pub pkey_index: u16,
}

impl MadAddr {
    /// The well-known Q_Key of QP1 (`UMAD_QKEY`).
    pub const DEFAULT_QKEY: u32 = 0x8001_0000;
    /// The permissive LID, used as the destination of directed-route SMPs.
    pub const PERMISSIVE_LID: u16 = 0xffff;

    /// An address from host-order values.
    #[doc(alias = "umad_set_addr")]
    pub fn new(lid: u16, qpn: u32, sl: u8, qkey: u32) -> MadAddr {
        MadAddr {
            lid,
            qpn,
            qkey,
            sl,
            ..MadAddr::default()
        }
    }

    /// An address from network-order values, as C callers pass them to `umad_set_addr_net`.
    #[doc(alias = "umad_set_addr_net")]
    pub fn from_net(lid_be: u16, qpn_be: u32, sl: u8, qkey_be: u32) -> MadAddr {
        MadAddr::new(
            u16::from_be(lid_be),
            u32::from_be(qpn_be),
            sl,
            u32::from_be(qkey_be),
        )
    }

    /// Directed-route SMPs: the permissive LID on QP0.
    pub fn directed_route() -> MadAddr {
        MadAddr::new(Self::PERMISSIVE_LID, 0, 0, 0)
    }

    /// LID-routed SMPs to `lid` on QP0.
    pub fn smi(lid: u16) -> MadAddr {
        MadAddr::new(lid, 0, 0, 0)
    }

    /// GSI MADs (PerfMgt, SA, …) to `lid` on QP1 with the default Q_Key.
    pub fn gsi(lid: u16) -> MadAddr {
        MadAddr::new(lid, 1, 0, Self::DEFAULT_QKEY)
    }

    /// The same address with a GRH.
    #[doc(alias = "umad_set_grh")]
    pub fn with_grh(mut self, grh: Grh) -> MadAddr {
        self.grh = Some(grh);
        self
    }

    /// The same address with a P_Key index.
    #[doc(alias = "umad_set_pkey")]
    pub fn with_pkey_index(mut self, pkey_index: u16) -> MadAddr {
        self.pkey_index = pkey_index;
        self
    }

    /// Writes the address into the address part of a user-MAD header (see
    /// [`UserMadHeader::addr_mut`](crate::abi::UserMadHeader::addr_mut)). Without a GRH the
    /// GRH fields are zeroed; the P_Key index is only written in the 64-byte layout, the only
    /// one that has it.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, a: &mut MadAddrView<T>) {
        a.set_qpn(self.qpn);
        a.set_qkey(self.qkey);
        a.set_lid(self.lid);
        a.set_sl(self.sl);
        a.set_path_bits(self.path_bits);
        let grh = self.grh.unwrap_or_default();
        a.set_grh_present(u8::from(self.grh.is_some()));
        a.set_gid_index(grh.gid_index);
        a.set_hop_limit(grh.hop_limit);
        a.set_traffic_class(grh.traffic_class);
        a.set_gid(&grh.gid);
        a.set_flow_label(grh.flow_label);
        a.set_pkey_index(self.pkey_index);
    }

    /// Reads the address out of the address part of a user-MAD header (see
    /// [`UserMadHeader::addr`](crate::abi::UserMadHeader::addr)); the GRH only when the
    /// header says one is present.
    pub fn parse<T: AsRef<[u8]>>(a: &MadAddrView<T>) -> MadAddr {
        let grh = (a.grh_present() != 0).then(|| Grh {
            gid: a.gid(),
            gid_index: a.gid_index(),
            hop_limit: a.hop_limit(),
            traffic_class: a.traffic_class(),
            flow_label: a.flow_label(),
        });
        MadAddr {
            lid: a.lid(),
            qpn: a.qpn(),
            qkey: a.qkey(),
            sl: a.sl(),
            path_bits: a.path_bits(),
            grh,
            pkey_index: a.pkey_index(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{HeaderLayout, UserMadHeader};

    #[test]
    fn host_and_network_order_agree() {
        let a = MadAddr::new(0x1234, 1, 3, MadAddr::DEFAULT_QKEY);
        let b = MadAddr::from_net(
            0x1234u16.to_be(),
            1u32.to_be(),
            3,
            MadAddr::DEFAULT_QKEY.to_be(),
        );
        assert_eq!(a, b);
        let g = Grh::from_net([7; 16], 2, 64, 5, 0x000a_bcdeu32.to_be());
        assert_eq!(g.flow_label, 0x000a_bcde);
    }

    #[test]
    fn emit_writes_network_order_bytes() {
        let mut h = [0u8; 64];
        let grh = Grh {
            gid: [0xfe; 16],
            gid_index: 3,
            hop_limit: 255,
            traffic_class: 7,
            flow_label: 0x12345,
        };
        let a = MadAddr::new(0x1234, 0x0102_0304, 5, 0x8001_0000)
            .with_grh(grh)
            .with_pkey_index(9);
        let mut view = UserMadHeader::new_checked(&mut h[..], HeaderLayout::WithPkey).unwrap();
        a.emit(&mut view.addr_mut());
        assert_eq!(&h[20..24], &[1, 2, 3, 4]);
        assert_eq!(&h[24..28], &[0x80, 0x01, 0, 0]);
        assert_eq!(&h[28..30], &[0x12, 0x34]);
        assert_eq!(h[30], 5);
        assert_eq!(h[32], 1);
        assert_eq!(h[33], 3);
        assert_eq!(h[34], 255);
        assert_eq!(h[35], 7);
        assert_eq!(&h[52..56], &[0, 1, 0x23, 0x45]);
        assert_eq!(u16::from_ne_bytes([h[56], h[57]]), 9);
        let view = UserMadHeader::new_checked(&h[..], HeaderLayout::WithPkey).unwrap();
        assert_eq!(MadAddr::parse(&view.addr()), a);
        // The old layout neither writes nor reads a P_Key index.
        let mut old = [0u8; 56];
        let mut view = UserMadHeader::new_checked(&mut old[..], HeaderLayout::Old).unwrap();
        a.emit(&mut view.addr_mut());
        assert_eq!(MadAddr::parse(&view.addr()), a.with_pkey_index(0));
    }
}
