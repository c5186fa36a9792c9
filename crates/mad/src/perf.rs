//! Performance management (class 0x04, IBA Vol 1, 16.1): request builders
//! and the data-area layout.
//!
//! A PerfMgt MAD is the 24-byte common header, 40 reserved bytes, then a
//! 192-byte data area at offset 64 holding the attribute (e.g.
//! [`PortCounters`]). PerfMgt MADs go to QP1.

use crate::attr::{PortCounters, PortCountersExt, PortDataSl, PortSamplesControl};
use crate::header::{Mad, MadHeader, Method, MgmtClass, MAD_SIZE};
use crate::{Error, Result};

/// Class version of performance management.
pub const PERF_CLASS_VERSION: u8 = 1;

/// Byte offset of the PerfMgt data area within the MAD.
pub const PERF_DATA_OFFSET: usize = 64;

/// Size of the PerfMgt data area.
pub const PERF_DATA_LEN: usize = MAD_SIZE - PERF_DATA_OFFSET;

/// PerfMgt attribute IDs (IBA 16.1.3, plus the extensions ibsim answers).
pub mod attr_id {
    /// ClassPortInfo (common to all classes).
    pub use crate::attr::id::CLASS_PORT_INFO;

    /// PortSamplesControl.
    pub const PORT_SAMPLES_CONTROL: u16 = 0x0010;
    /// PortSamplesResult.
    pub const PORT_SAMPLES_RESULT: u16 = 0x0011;
    /// PortCounters.
    pub const PORT_COUNTERS: u16 = 0x0012;
    /// PortRcvErrorDetails.
    pub const PORT_RCV_ERROR_DETAILS: u16 = 0x0015;
    /// PortXmitDiscardDetails.
    pub const PORT_XMIT_DISCARD_DETAILS: u16 = 0x0016;
    /// PortOpRcvCounters.
    pub const PORT_OP_RCV_COUNTERS: u16 = 0x0017;
    /// PortFlowCtlCounters.
    pub const PORT_FLOW_CTL_COUNTERS: u16 = 0x0018;
    /// PortVLOpPackets.
    pub const PORT_VL_OP_PACKETS: u16 = 0x0019;
    /// PortVLOpData.
    pub const PORT_VL_OP_DATA: u16 = 0x001a;
    /// PortVLXmitFlowCtlUpdateErrors.
    pub const PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS: u16 = 0x001b;
    /// PortVLXmitWaitCounters.
    pub const PORT_VL_XMIT_WAIT_COUNTERS: u16 = 0x001c;
    /// PortCountersExtended (64-bit counters).
    pub const PORT_COUNTERS_EXT: u16 = 0x001d;
    /// PortExtendedSpeedsCounters.
    pub const PORT_EXT_SPEEDS_COUNTERS: u16 = 0x001f;
    /// PortXmitDataSL.
    pub const PORT_XMIT_DATA_SL: u16 = 0x0036;
    /// PortRcvDataSL.
    pub const PORT_RCV_DATA_SL: u16 = 0x0037;
}

/// ClassPortInfo.CapabilityMask bits of the PerfMgt class (IBA 16.1.3.1).
pub mod cap {
    /// PortSelect 0xff sums all ports (switches).
    pub const ALL_PORT_SELECT: u16 = 1 << 8;
    /// PortCountersExtended is supported.
    pub const EXT_WIDTH_SUPPORTED: u16 = 1 << 9;
    /// PortCountersExtended without the optional counters is supported.
    pub const EXT_WIDTH_NOIETF_SUPPORTED: u16 = 1 << 10;
    /// SamplesOnly mode of PortSamplesControl is supported.
    pub const SAMPLES_ONLY_SUPPORTED: u16 = 1 << 11;
    /// PortCounters.PortXmitWait is supported.
    pub const PORT_COUNTERS_XMIT_WAIT_SUPPORTED: u16 = 1 << 12;
    /// Limited-member P_Key multicast packets are not counted as
    /// PortRcvConstraintErrors.
    pub const INH_LMTD_PKEY_MC_CONSTR_ERR: u16 = 1 << 13;
    /// RS-FEC counters of PortExtendedSpeedsCounters are supported.
    pub const RSFEC_COUNTERS_SUPPORTED: u16 = 1 << 14;
    /// PortCounters.QP1Dropped is supported.
    pub const QP1_DROP_SUPPORTED: u16 = 1 << 15;
}

/// ClassPortInfo.CapabilityMask2 bits of the PerfMgt class (opensm
/// `IB_PM_IS_*`).
pub mod cap2 {
    /// PM_Key is supported.
    pub const IS_PM_KEY_SUPPORTED: u32 = 1 << 0;
    /// The additional PortCountersExtended counters (bytes 72–183:
    /// SymbolErrorCounter … QP1Dropped) are supported.
    pub const IS_ADDL_PORT_CTRS_EXT_SUPPORTED: u32 = 1 << 1;
}

/// Builds a PerfMgt request: base version 1, class 0x04, class version 1,
/// status 0, reserved bytes and data zero.
pub fn request(method: Method, attr_id: u16, attr_mod: u32, tid: u64) -> [u8; MAD_SIZE] {
    let mut buf = [0u8; MAD_SIZE];
    MadHeader::request(
        MgmtClass::Perf,
        PERF_CLASS_VERSION,
        method,
        attr_id,
        attr_mod,
        tid,
    )
    .emit(&mut Mad::new_unchecked(&mut buf[..]));
    buf
}

/// Builds a PerfMgt `Get` request with an all-zero data area (e.g. for
/// ClassPortInfo).
pub fn get_request(attr_id: u16, attr_mod: u32, tid: u64) -> [u8; MAD_SIZE] {
    request(Method::Get, attr_id, attr_mod, tid)
}

/// Builds `Get(PortCounters)` for `port_select` (0xff: all ports of a
/// switch with [`cap::ALL_PORT_SELECT`]), as `perfquery` sends it.
pub fn port_counters_get(port_select: u8, tid: u64) -> [u8; MAD_SIZE] {
    let mut buf = get_request(attr_id::PORT_COUNTERS, 0, tid);
    PortCounters {
        port_select,
        ..PortCounters::default()
    }
    .emit(&mut buf[PERF_DATA_OFFSET..]);
    buf
}

/// Builds `Set(PortCounters)` that resets the counters selected by
/// `counter_select` (0xffff: all of them) on `port_select`, as
/// `perfquery -R` sends it.
pub fn port_counters_reset(port_select: u8, counter_select: u16, tid: u64) -> [u8; MAD_SIZE] {
    let mut buf = request(Method::Set, attr_id::PORT_COUNTERS, 0, tid);
    PortCounters {
        port_select,
        counter_select,
        ..PortCounters::default()
    }
    .emit(&mut buf[PERF_DATA_OFFSET..]);
    buf
}

/// Builds `Get(PortCountersExtended)` for `port_select` (0xff: all ports
/// of a switch with [`cap::ALL_PORT_SELECT`]), as `perfquery -x` sends it.
pub fn port_counters_ext_get(port_select: u8, tid: u64) -> [u8; MAD_SIZE] {
    let mut buf = get_request(attr_id::PORT_COUNTERS_EXT, 0, tid);
    PortCountersExt {
        port_select,
        ..PortCountersExt::default()
    }
    .emit(&mut buf[PERF_DATA_OFFSET..]);
    buf
}

/// Builds `Set(PortCountersExtended)` that resets the counters selected by
/// `counter_select` (the first eight; 0xff: all of them) and
/// `counter_select2` (the additional counters) on `port_select`.
pub fn port_counters_ext_reset(
    port_select: u8,
    counter_select: u16,
    counter_select2: u32,
    tid: u64,
) -> [u8; MAD_SIZE] {
    let mut buf = request(Method::Set, attr_id::PORT_COUNTERS_EXT, 0, tid);
    PortCountersExt {
        port_select,
        counter_select,
        counter_select2,
        ..PortCountersExt::default()
    }
    .emit(&mut buf[PERF_DATA_OFFSET..]);
    buf
}

/// Builds `Get(PortSamplesControl)` for `port_select`.
pub fn port_samples_control_get(port_select: u8, tid: u64) -> [u8; MAD_SIZE] {
    let mut buf = get_request(attr_id::PORT_SAMPLES_CONTROL, 0, tid);
    PortSamplesControl {
        port_select,
        ..PortSamplesControl::default()
    }
    .emit(&mut buf[PERF_DATA_OFFSET..]);
    buf
}

/// Builds `Get(PortXmitDataSL)` for `port_select`, as `perfquery --xmtsl`
/// sends it.
pub fn port_xmit_data_sl_get(port_select: u8, tid: u64) -> [u8; MAD_SIZE] {
    data_sl_get(attr_id::PORT_XMIT_DATA_SL, port_select, tid)
}

/// Builds `Get(PortRcvDataSL)` for `port_select`, as `perfquery --rcvsl`
/// sends it.
pub fn port_rcv_data_sl_get(port_select: u8, tid: u64) -> [u8; MAD_SIZE] {
    data_sl_get(attr_id::PORT_RCV_DATA_SL, port_select, tid)
}

fn data_sl_get(attr_id: u16, port_select: u8, tid: u64) -> [u8; MAD_SIZE] {
    let mut buf = get_request(attr_id, 0, tid);
    PortDataSl {
        port_select,
        ..PortDataSl::default()
    }
    .emit(&mut buf[PERF_DATA_OFFSET..]);
    buf
}

/// The data area (offset 64 on) of a PerfMgt MAD, or
/// [`Error::Truncated`] if `mad` is not longer than 64 bytes.
pub fn data(mad: &[u8]) -> Result<&[u8]> {
    match mad.get(PERF_DATA_OFFSET..) {
        Some(d) if !d.is_empty() => Ok(d),
        _ => Err(Error::Truncated {
            needed: PERF_DATA_OFFSET + 1,
            got: mad.len(),
        }),
    }
}

/// The data area of a PerfMgt MAD, mutably; see [`data`].
pub fn data_mut(mad: &mut [u8]) -> Result<&mut [u8]> {
    let got = mad.len();
    match mad.get_mut(PERF_DATA_OFFSET..) {
        Some(d) if !d.is_empty() => Ok(d),
        _ => Err(Error::Truncated {
            needed: PERF_DATA_OFFSET + 1,
            got,
        }),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn test_port_counters_get() {
        let req = port_counters_get(1, 0x777);
        let mut expected = [0u8; 256];
        expected[..24].copy_from_slice(&[
            0x01, 0x04, 0x01, 0x01, // base, Perf, v1, Get
            0, 0, 0, 0, // status, class specific
            0, 0, 0, 0, 0, 0, 0x07, 0x77, // tid
            0x00, 0x12, 0, 0, // PortCounters, reserved
            0, 0, 0, 0, // attr mod
        ]);
        expected[65] = 1; // PortSelect
        assert_eq!(req, expected);

        let mad = Mad::new_checked(&req[..]).unwrap();
        assert_eq!(mad.mgmt_class(), MgmtClass::Perf);
        assert_eq!(mad.mgmt_class().qp(), 1);
        let pc = PortCounters::parse(data(&req).unwrap()).unwrap();
        assert_eq!(pc.port_select, 1);
    }

    #[test]
    fn test_port_counters_reset() {
        let req = port_counters_reset(0xff, 0xffff, 9);
        assert_eq!(req[3], 0x02); // Set
        assert_eq!(req[17], 0x12);
        assert_eq!(req[64..68], [0x00, 0xff, 0xff, 0xff]);
        assert!(req[68..].iter().all(|&b| b == 0));
    }

    #[test]
    fn test_get_request() {
        let req = get_request(attr_id::CLASS_PORT_INFO, 0, 1);
        let h = MadHeader::parse(&Mad::new_checked(&req[..]).unwrap()).unwrap();
        assert_eq!(h.mgmt_class, MgmtClass::Perf);
        assert_eq!(h.class_version, PERF_CLASS_VERSION);
        assert_eq!(h.method, Method::Get);
        assert_eq!(h.attr_id, 1);
        assert_eq!(h.tid, 1);
        assert!(req[24..].iter().all(|&b| b == 0));
    }

    #[test]
    fn test_new_attribute_gets() {
        type Builder = fn(u8, u64) -> [u8; MAD_SIZE];
        let cases: [(Builder, u16); 4] = [
            (port_counters_ext_get, 0x1d),
            (port_samples_control_get, 0x10),
            (port_xmit_data_sl_get, 0x36),
            (port_rcv_data_sl_get, 0x37),
        ];
        for (build, id) in cases {
            let req = build(3, 0x777);
            let mut expected = [0u8; 256];
            expected[..24].copy_from_slice(&[
                0x01, 0x04, 0x01, 0x01, // base, Perf, v1, Get
                0, 0, 0, 0, // status, class specific
                0, 0, 0, 0, 0, 0, 0x07, 0x77, // tid
                0x00, 0, 0, 0, // attribute, reserved
                0, 0, 0, 0, // attr mod
            ]);
            expected[17] = id.to_be_bytes()[1];
            expected[65] = 3; // PortSelect
            assert_eq!(req, expected, "attribute {id:#x}");
        }
        let req = port_counters_ext_get(1, 5);
        let pc = PortCountersExt::parse(data(&req).unwrap()).unwrap();
        assert_eq!(pc.port_select, 1);
        let req = port_xmit_data_sl_get(2, 5);
        assert_eq!(
            PortDataSl::parse(data(&req).unwrap()).unwrap().port_select,
            2
        );
    }

    #[test]
    fn test_port_counters_ext_reset() {
        let req = port_counters_ext_reset(0xff, 0x00ff, 0x0000_3fff, 9);
        assert_eq!(req[3], 0x02); // Set
        assert_eq!(req[16..18], [0x00, 0x1d]);
        assert_eq!(
            req[64..72],
            [0x00, 0xff, 0x00, 0xff, 0x00, 0x00, 0x3f, 0xff]
        );
        assert!(req[72..].iter().all(|&b| b == 0));
    }

    #[test]
    fn test_data() {
        assert_eq!(PERF_DATA_LEN, 192);
        let mut mad = [0u8; 256];
        assert_eq!(data(&mad).unwrap().len(), 192);
        data_mut(&mut mad).unwrap()[0] = 7;
        assert_eq!(mad[64], 7);
        assert_eq!(
            data(&mad[..64]),
            Err(Error::Truncated {
                needed: 65,
                got: 64
            })
        );
        assert_eq!(
            data(&mad[..10]),
            Err(Error::Truncated {
                needed: 65,
                got: 10
            })
        );
        assert!(data_mut(&mut mad[..3]).is_err());
        assert_eq!(data(&mad[..65]).unwrap(), &[7]);
    }
}
