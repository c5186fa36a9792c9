//! PortInfoRecord (SA attribute 0x12, IBA Vol 1, 15.2.5): 68 bytes (72
//! with padding in a GetTableResp).
//!
//! ```text
//!   0..2   EndportLID
//!   2      PortNum
//!   3      Options
//!   4..68  PortInfo (64 bytes)
//! ```

use crate::attr::PortInfo;
use crate::bytes::{self, get_u16, set_u16};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const ENDPORT_LID: Field = 0..2;
    pub(super) const PORT_NUM: usize = 2;
    pub(super) const OPTIONS: usize = 3;
    pub(super) const PORT_INFO: Field = 4..68;
}

/// PortInfoRecord ComponentMask bits, in IBA order (opensm
/// `IB_PIR_COMPMASK_*`): the record header, then one bit per PortInfo
/// field. Bits opensm calls `RESV*` are named after the PortInfo bits
/// they cover.
pub mod comp {
    /// EndportLID.
    pub const ENDPORT_LID: u64 = 1 << 0;
    /// PortNum.
    pub const PORT_NUM: u64 = 1 << 1;
    /// Options.
    pub const OPTIONS: u64 = 1 << 2;
    /// M_Key.
    pub const M_KEY: u64 = 1 << 3;
    /// GidPrefix.
    pub const GID_PREFIX: u64 = 1 << 4;
    /// LID.
    pub const LID: u64 = 1 << 5;
    /// MasterSMLID.
    pub const MASTER_SM_LID: u64 = 1 << 6;
    /// CapabilityMask.
    pub const CAPABILITY_MASK: u64 = 1 << 7;
    /// DiagCode.
    pub const DIAG_CODE: u64 = 1 << 8;
    /// M_KeyLeasePeriod.
    pub const M_KEY_LEASE_PERIOD: u64 = 1 << 9;
    /// LocalPortNum.
    pub const LOCAL_PORT_NUM: u64 = 1 << 10;
    /// LinkWidthEnabled.
    pub const LINK_WIDTH_ENABLED: u64 = 1 << 11;
    /// LinkWidthSupported.
    pub const LINK_WIDTH_SUPPORTED: u64 = 1 << 12;
    /// LinkWidthActive.
    pub const LINK_WIDTH_ACTIVE: u64 = 1 << 13;
    /// LinkSpeedSupported.
    pub const LINK_SPEED_SUPPORTED: u64 = 1 << 14;
    /// PortState.
    pub const PORT_STATE: u64 = 1 << 15;
    /// PortPhysicalState.
    pub const PORT_PHYSICAL_STATE: u64 = 1 << 16;
    /// LinkDownDefaultState.
    pub const LINK_DOWN_DEFAULT_STATE: u64 = 1 << 17;
    /// M_KeyProtectBits.
    pub const M_KEY_PROTECT_BITS: u64 = 1 << 18;
    /// Reserved bits 5:3 of PortInfo byte 34 (opensm `RESV2`).
    pub const RESERVED_34: u64 = 1 << 19;
    /// LMC.
    pub const LMC: u64 = 1 << 20;
    /// LinkSpeedActive.
    pub const LINK_SPEED_ACTIVE: u64 = 1 << 21;
    /// LinkSpeedEnabled.
    pub const LINK_SPEED_ENABLED: u64 = 1 << 22;
    /// NeighborMTU.
    pub const NEIGHBOR_MTU: u64 = 1 << 23;
    /// MasterSMSL.
    pub const MASTER_SM_SL: u64 = 1 << 24;
    /// VLCap.
    pub const VL_CAP: u64 = 1 << 25;
    /// InitType.
    pub const INIT_TYPE: u64 = 1 << 26;
    /// VLHighLimit.
    pub const VL_HIGH_LIMIT: u64 = 1 << 27;
    /// VLArbitrationHighCap.
    pub const VL_ARBITRATION_HIGH_CAP: u64 = 1 << 28;
    /// VLArbitrationLowCap.
    pub const VL_ARBITRATION_LOW_CAP: u64 = 1 << 29;
    /// InitTypeReply.
    pub const INIT_TYPE_REPLY: u64 = 1 << 30;
    /// MTUCap.
    pub const MTU_CAP: u64 = 1 << 31;
    /// VLStallCount.
    pub const VL_STALL_COUNT: u64 = 1 << 32;
    /// HOQLife.
    pub const HOQ_LIFE: u64 = 1 << 33;
    /// OperationalVLs.
    pub const OPERATIONAL_VLS: u64 = 1 << 34;
    /// PartitionEnforcementInbound.
    pub const PARTITION_ENFORCEMENT_INBOUND: u64 = 1 << 35;
    /// PartitionEnforcementOutbound.
    pub const PARTITION_ENFORCEMENT_OUTBOUND: u64 = 1 << 36;
    /// FilterRawInbound.
    pub const FILTER_RAW_INBOUND: u64 = 1 << 37;
    /// FilterRawOutbound.
    pub const FILTER_RAW_OUTBOUND: u64 = 1 << 38;
    /// M_KeyViolations.
    pub const M_KEY_VIOLATIONS: u64 = 1 << 39;
    /// P_KeyViolations.
    pub const P_KEY_VIOLATIONS: u64 = 1 << 40;
    /// Q_KeyViolations.
    pub const Q_KEY_VIOLATIONS: u64 = 1 << 41;
    /// GUIDCap.
    pub const GUID_CAP: u64 = 1 << 42;
    /// ClientReregister.
    pub const CLIENT_REREGISTER: u64 = 1 << 43;
    /// MulticastPKeyTrapSuppressionEnabled (byte 51 bits 6:5; opensm
    /// `RESV3`).
    pub const MULTICAST_PKEY_TRAP_SUPPRESSION_ENABLED: u64 = 1 << 44;
    /// SubnetTimeOut.
    pub const SUBNET_TIMEOUT: u64 = 1 << 45;
    /// Reserved bits 7:5 of PortInfo byte 52 (opensm `RESV4`).
    pub const RESERVED_52: u64 = 1 << 46;
    /// RespTimeValue.
    pub const RESP_TIME_VALUE: u64 = 1 << 47;
    /// LocalPhyErrors.
    pub const LOCAL_PHY_ERRORS: u64 = 1 << 48;
    /// OverrunErrors.
    pub const OVERRUN_ERRORS: u64 = 1 << 49;
    /// MaxCreditHint.
    pub const MAX_CREDIT_HINT: u64 = 1 << 50;
    /// PortInfo byte 56 (reserved before IBA 1.7, now the XDR
    /// LinkSpeedExt*2 fields; opensm `RESV5`).
    pub const RESERVED_56: u64 = 1 << 51;
    /// LinkRoundTripLatency.
    pub const LINK_ROUND_TRIP_LATENCY: u64 = 1 << 52;
    /// CapabilityMask2.
    pub const CAPABILITY_MASK2: u64 = 1 << 53;
    /// LinkSpeedExtActive.
    pub const LINK_SPEED_EXT_ACTIVE: u64 = 1 << 54;
    /// LinkSpeedExtSupported.
    pub const LINK_SPEED_EXT_SUPPORTED: u64 = 1 << 55;
    /// Reserved bits 7:5 of PortInfo byte 63 (opensm `RESV7`).
    pub const RESERVED_63: u64 = 1 << 56;
    /// LinkSpeedExtEnabled.
    pub const LINK_SPEED_EXT_ENABLED: u64 = 1 << 57;
}

/// PortInfoRecord, parsed: a port's PortInfo as the SA knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortInfoRecord {
    /// LID of the end port (for switch ports: of port 0).
    pub endport_lid: u16,
    /// Port number.
    pub port_num: u8,
    /// Options (byte 3; reserved in early IBA versions), kept verbatim.
    pub options: u8,
    /// The port's PortInfo.
    pub port_info: PortInfo,
}

impl PortInfoRecord {
    /// Size of PortInfoRecord in the IBA table.
    pub const LEN: usize = field::PORT_INFO.end;

    /// Parses the first [`PortInfoRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<PortInfoRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(PortInfoRecord {
            endport_lid: get_u16(&b[field::ENDPORT_LID]),
            port_num: b[field::PORT_NUM],
            options: b[field::OPTIONS],
            port_info: PortInfo::parse(&b[field::PORT_INFO])?,
        })
    }

    /// Bytes [`PortInfoRecord::emit`] writes: [`PortInfoRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`PortInfoRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`PortInfoRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::ENDPORT_LID], self.endport_lid);
        b[field::PORT_NUM] = self.port_num;
        b[field::OPTIONS] = self.options;
        self.port_info.emit(&mut b[field::PORT_INFO]);
    }
}

impl_sa_record!(PortInfoRecord, super::attr_id::PORT_INFO_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::attr::{cap, PortState};
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// PortInfoRecord for LID 2 port 1: an active HCA port that is also
    /// the SM (LID 2, SM LID 2, IsSM).
    static RECORD_BYTES: [u8; 68] = {
        let mut b = [0u8; 68];
        b[1] = 0x02; // EndportLID 2
        b[2] = 1; // PortNum 1
        b[3] = 0; // Options
        b[4 + 8] = 0xfe; // GidPrefix fe80::
        b[4 + 9] = 0x80;
        b[4 + 17] = 0x02; // LID 2
        b[4 + 19] = 0x02; // MasterSMLID 2
        b[4 + 23] = 0x02; // CapabilityMask: IsSM
        b[4 + 28] = 1; // LocalPortNum
        b[4 + 32] = 0x04; // PortState Active
        b
    };

    fn expected() -> PortInfoRecord {
        PortInfoRecord {
            endport_lid: 2,
            port_num: 1,
            options: 0,
            port_info: PortInfo {
                gid_prefix: 0xfe80_0000_0000_0000,
                lid: 2,
                master_sm_lid: 2,
                capability_mask: cap::IS_SM,
                local_port_num: 1,
                port_state: PortState::Active,
                ..PortInfo::default()
            },
        }
    }

    #[test]
    fn test_deconstruct() {
        assert_eq!(PortInfoRecord::parse(&RECORD_BYTES), Ok(expected()));
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 72];
        expected().emit(&mut out);
        assert_eq!(out[..68], RECORD_BYTES);
        assert_eq!(out[68..], [0xa5; 4]);
        assert_eq!(expected().buffer_len(), 68);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            PortInfoRecord::LEN,
            PortInfoRecord::parse,
            PortInfoRecord::emit,
            12,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, PortInfoRecord>] = &[
            ("EndportLID", |r| r.endport_lid = u16::MAX, 0, &[0xff; 2]),
            ("PortNum", |r| r.port_num = 0xff, 2, &[0xff]),
            ("Options", |r| r.options = 0xff, 3, &[0xff]),
            ("PortInfo", |r| r.port_info = PortInfo::parse(&[0xff; 64]).unwrap(), 4, &[0xff; 64]),
        ];
        check_offsets(
            PortInfoRecord::LEN,
            PortInfoRecord::parse,
            PortInfoRecord::emit,
            cases,
        );
        // PortInfo sits at byte 4: its LID (PortInfo bytes 16..18) is at 20.
        let mut r = PortInfoRecord::default();
        r.port_info.lid = u16::MAX;
        let mut out = [0u8; 68];
        r.emit(&mut out);
        assert_eq!(out[20..22], [0xff, 0xff]);
        assert_eq!(out.iter().filter(|&&b| b != 0).count(), 2);
    }

    #[test]
    fn test_comp_mask() {
        #[rustfmt::skip]
        let bits = [
            ("EndportLID", comp::ENDPORT_LID), ("PortNum", comp::PORT_NUM),
            ("Options", comp::OPTIONS), ("M_Key", comp::M_KEY),
            ("GidPrefix", comp::GID_PREFIX), ("LID", comp::LID),
            ("MasterSMLID", comp::MASTER_SM_LID), ("CapabilityMask", comp::CAPABILITY_MASK),
            ("DiagCode", comp::DIAG_CODE), ("M_KeyLeasePeriod", comp::M_KEY_LEASE_PERIOD),
            ("LocalPortNum", comp::LOCAL_PORT_NUM), ("LinkWidthEnabled", comp::LINK_WIDTH_ENABLED),
            ("LinkWidthSupported", comp::LINK_WIDTH_SUPPORTED), ("LinkWidthActive", comp::LINK_WIDTH_ACTIVE),
            ("LinkSpeedSupported", comp::LINK_SPEED_SUPPORTED), ("PortState", comp::PORT_STATE),
            ("PortPhysicalState", comp::PORT_PHYSICAL_STATE),
            ("LinkDownDefaultState", comp::LINK_DOWN_DEFAULT_STATE),
            ("M_KeyProtectBits", comp::M_KEY_PROTECT_BITS), ("reserved", comp::RESERVED_34),
            ("LMC", comp::LMC), ("LinkSpeedActive", comp::LINK_SPEED_ACTIVE),
            ("LinkSpeedEnabled", comp::LINK_SPEED_ENABLED), ("NeighborMTU", comp::NEIGHBOR_MTU),
            ("MasterSMSL", comp::MASTER_SM_SL), ("VLCap", comp::VL_CAP),
            ("InitType", comp::INIT_TYPE), ("VLHighLimit", comp::VL_HIGH_LIMIT),
            ("VLArbitrationHighCap", comp::VL_ARBITRATION_HIGH_CAP),
            ("VLArbitrationLowCap", comp::VL_ARBITRATION_LOW_CAP),
            ("InitTypeReply", comp::INIT_TYPE_REPLY), ("MTUCap", comp::MTU_CAP),
            ("VLStallCount", comp::VL_STALL_COUNT), ("HOQLife", comp::HOQ_LIFE),
            ("OperationalVLs", comp::OPERATIONAL_VLS),
            ("PartitionEnforcementInbound", comp::PARTITION_ENFORCEMENT_INBOUND),
            ("PartitionEnforcementOutbound", comp::PARTITION_ENFORCEMENT_OUTBOUND),
            ("FilterRawInbound", comp::FILTER_RAW_INBOUND),
            ("FilterRawOutbound", comp::FILTER_RAW_OUTBOUND),
            ("M_KeyViolations", comp::M_KEY_VIOLATIONS), ("P_KeyViolations", comp::P_KEY_VIOLATIONS),
            ("Q_KeyViolations", comp::Q_KEY_VIOLATIONS), ("GUIDCap", comp::GUID_CAP),
            ("ClientReregister", comp::CLIENT_REREGISTER),
            ("MulticastPKeyTrapSuppressionEnabled", comp::MULTICAST_PKEY_TRAP_SUPPRESSION_ENABLED),
            ("SubnetTimeOut", comp::SUBNET_TIMEOUT), ("reserved", comp::RESERVED_52),
            ("RespTimeValue", comp::RESP_TIME_VALUE), ("LocalPhyErrors", comp::LOCAL_PHY_ERRORS),
            ("OverrunErrors", comp::OVERRUN_ERRORS), ("MaxCreditHint", comp::MAX_CREDIT_HINT),
            ("reserved", comp::RESERVED_56), ("LinkRoundTripLatency", comp::LINK_ROUND_TRIP_LATENCY),
            ("CapabilityMask2", comp::CAPABILITY_MASK2),
            ("LinkSpeedExtActive", comp::LINK_SPEED_EXT_ACTIVE),
            ("LinkSpeedExtSupported", comp::LINK_SPEED_EXT_SUPPORTED),
            ("reserved", comp::RESERVED_63), ("LinkSpeedExtEnabled", comp::LINK_SPEED_EXT_ENABLED),
        ];
        check_comp_mask(&bits);
    }
}
