//! The text libibmad prints for the performance management (PerfMgt) attributes:
//! `mad_dump_perfcounters`, `mad_dump_perfcounters_ext`, `mad_dump_perfcounters_xmt_sl`, ...,
//! as tables of [`Field`]s in libibmad's order (the data area of the PerfMgt MAD, offset 64 of
//! the MAD, bit 0 = the MSB of its byte 0).
//!
//! Most of libibmad's PerfMgt dumps print [`SELECTS`] (PortSelect, CounterSelect) and then
//! one attribute's counters; infiniband-diags' `perfquery` shows PortCountersExtended in
//! three parts, by the PMA's capabilities ([`PORT_COUNTERS_EXT`],
//! [`PORT_COUNTERS_EXT_WIDTH`], [`PORT_COUNTERS_EXT_ADDL`]).
//!
//! ```
//! use ibmad::dump::{dump_fields, perf::PORT_COUNTERS};
//! let mut data = [0u8; 192];
//! data[1] = 1; // PortSelect
//! let text = dump_fields(&data, PORT_COUNTERS);
//! assert!(text.starts_with("PortSelect:......................1\n"));
//! assert!(text.contains("PortXmitWait:....................0\n"));
//! ```

use super::{f, Field, Fmt};

/// PortSelect and CounterSelect, the first lines of most PerfMgt dumps
/// (`IB_PC_EXT_PORT_SELECT_F`..`IB_PC_EXT_XMT_BYTES_F`).
pub const SELECTS: &[Field] = &[
    f("PortSelect", 8, 8, Fmt::Uint),
    f("CounterSelect", 16, 16, Fmt::Hex),
];

/// PortCounters as `mad_dump_perfcounters` prints it (QP1Dropped before VL15Dropped).
pub const PORT_COUNTERS: &[Field] = &[
    f("PortSelect", 8, 8, Fmt::Uint),
    f("CounterSelect", 16, 16, Fmt::Hex),
    f("SymbolErrorCounter", 32, 16, Fmt::Uint),
    f("LinkErrorRecoveryCounter", 48, 8, Fmt::Uint),
    f("LinkDownedCounter", 56, 8, Fmt::Uint),
    f("PortRcvErrors", 64, 16, Fmt::Uint),
    f("PortRcvRemotePhysicalErrors", 80, 16, Fmt::Uint),
    f("PortRcvSwitchRelayErrors", 96, 16, Fmt::Uint),
    f("PortXmitDiscards", 112, 16, Fmt::Uint),
    f("PortXmitConstraintErrors", 128, 8, Fmt::Uint),
    f("PortRcvConstraintErrors", 136, 8, Fmt::Uint),
    f("CounterSelect2", 144, 8, Fmt::Hex),
    f("LocalLinkIntegrityErrors", 152, 4, Fmt::Uint),
    f("ExcessiveBufferOverrunErrors", 156, 4, Fmt::Uint),
    // libibmad's QP1Dropped field reads bits 176..191, the same as VL15Dropped.
    f("QP1Dropped", 176, 16, Fmt::Uint),
    f("VL15Dropped", 176, 16, Fmt::Uint),
    f("PortXmitData", 192, 32, Fmt::Uint),
    f("PortRcvData", 224, 32, Fmt::Uint),
    f("PortXmitPkts", 256, 32, Fmt::Uint),
    f("PortRcvPkts", 288, 32, Fmt::Uint),
    f("PortXmitWait", 320, 32, Fmt::Uint),
];

/// PortCountersExtended, the first eight counters after the selects (`IB_PC_EXT_FIRST_F`..`IB_PC_EXT_XMT_UPKTS_F`); the four unicast/multicast counters are [`PORT_COUNTERS_EXT_WIDTH`].
pub const PORT_COUNTERS_EXT: &[Field] = &[
    f("PortSelect", 8, 8, Fmt::Uint),
    f("CounterSelect", 16, 16, Fmt::Hex),
    f("PortXmitData", 64, 64, Fmt::Uint),
    f("PortRcvData", 128, 64, Fmt::Uint),
    f("PortXmitPkts", 192, 64, Fmt::Uint),
    f("PortRcvPkts", 256, 64, Fmt::Uint),
];

/// PortCountersExtended's unicast and multicast packet counters (shown when the PMA has `ExtendedWidth` support).
pub const PORT_COUNTERS_EXT_WIDTH: &[Field] = &[
    f("PortUnicastXmitPkts", 320, 64, Fmt::Uint),
    f("PortUnicastRcvPkts", 384, 64, Fmt::Uint),
    f("PortMulticastXmitPkts", 448, 64, Fmt::Uint),
    f("PortMulticastRcvPkts", 512, 64, Fmt::Uint),
];

/// PortCountersExtended's additional counters (`CounterSelect2` to `QP1Dropped`, shown when `IsAdditionalPortCountersExtendedSupported`).
pub const PORT_COUNTERS_EXT_ADDL: &[Field] = &[
    f("CounterSelect2", 32, 32, Fmt::Hex),
    f("SymbolErrorCounter", 576, 64, Fmt::Uint),
    f("LinkErrorRecoveryCounter", 640, 64, Fmt::Uint),
    f("LinkDownedCounter", 704, 64, Fmt::Uint),
    f("PortRcvErrors", 768, 64, Fmt::Uint),
    f("PortRcvRemotePhysicalErrors", 832, 64, Fmt::Uint),
    f("PortRcvSwitchRelayErrors", 896, 64, Fmt::Uint),
    f("PortXmitDiscards", 960, 64, Fmt::Uint),
    f("PortXmitConstraintErrors", 1024, 64, Fmt::Uint),
    f("PortRcvConstraintErrors", 1088, 64, Fmt::Uint),
    f("LocalLinkIntegrityErrors", 1152, 64, Fmt::Uint),
    f("ExcessiveBufferOverrunErrors", 1216, 64, Fmt::Uint),
    f("VL15Dropped", 1280, 64, Fmt::Uint),
    f("PortXmitWait", 1344, 64, Fmt::Uint),
    f("QP1Dropped", 1408, 64, Fmt::Uint),
];

/// PortXmitDataSL's counters (after [`SELECTS`]).
pub const PORT_XMIT_DATA_SL: &[Field] = &[
    f("XmtDataSL0", 32, 32, Fmt::Uint),
    f("XmtDataSL1", 64, 32, Fmt::Uint),
    f("XmtDataSL2", 96, 32, Fmt::Uint),
    f("XmtDataSL3", 128, 32, Fmt::Uint),
    f("XmtDataSL4", 160, 32, Fmt::Uint),
    f("XmtDataSL5", 192, 32, Fmt::Uint),
    f("XmtDataSL6", 224, 32, Fmt::Uint),
    f("XmtDataSL7", 256, 32, Fmt::Uint),
    f("XmtDataSL8", 288, 32, Fmt::Uint),
    f("XmtDataSL9", 320, 32, Fmt::Uint),
    f("XmtDataSL10", 352, 32, Fmt::Uint),
    f("XmtDataSL11", 384, 32, Fmt::Uint),
    f("XmtDataSL12", 416, 32, Fmt::Uint),
    f("XmtDataSL13", 448, 32, Fmt::Uint),
    f("XmtDataSL14", 480, 32, Fmt::Uint),
    f("XmtDataSL15", 512, 32, Fmt::Uint),
];

/// PortRcvDataSL's counters (after [`SELECTS`]).
pub const PORT_RCV_DATA_SL: &[Field] = &[
    f("RcvDataSL0", 32, 32, Fmt::Uint),
    f("RcvDataSL1", 64, 32, Fmt::Uint),
    f("RcvDataSL2", 96, 32, Fmt::Uint),
    f("RcvDataSL3", 128, 32, Fmt::Uint),
    f("RcvDataSL4", 160, 32, Fmt::Uint),
    f("RcvDataSL5", 192, 32, Fmt::Uint),
    f("RcvDataSL6", 224, 32, Fmt::Uint),
    f("RcvDataSL7", 256, 32, Fmt::Uint),
    f("RcvDataSL8", 288, 32, Fmt::Uint),
    f("RcvDataSL9", 320, 32, Fmt::Uint),
    f("RcvDataSL10", 352, 32, Fmt::Uint),
    f("RcvDataSL11", 384, 32, Fmt::Uint),
    f("RcvDataSL12", 416, 32, Fmt::Uint),
    f("RcvDataSL13", 448, 32, Fmt::Uint),
    f("RcvDataSL14", 480, 32, Fmt::Uint),
    f("RcvDataSL15", 512, 32, Fmt::Uint),
];

/// PortXmitDiscardDetails' counters (after [`SELECTS`]).
pub const PORT_XMIT_DISCARD_DETAILS: &[Field] = &[
    f("PortInactiveDiscards", 32, 16, Fmt::Uint),
    f("PortNeighborMTUDiscards", 48, 16, Fmt::Uint),
    f("PortSwLifetimeLimitDiscards", 64, 16, Fmt::Uint),
    f("PortSwHOQLifetimeLimitDiscards", 80, 16, Fmt::Uint),
];

/// PortRcvErrorDetails' counters (after [`SELECTS`]).
pub const PORT_RCV_ERROR_DETAILS: &[Field] = &[
    f("PortLocalPhysicalErrors", 32, 16, Fmt::Uint),
    f("PortMalformedPktErrors", 48, 16, Fmt::Uint),
    f("PortBufferOverrunErrors", 64, 16, Fmt::Uint),
    f("PortDLIDMappingErrors", 80, 16, Fmt::Uint),
    f("PortVLMappingErrors", 96, 16, Fmt::Uint),
    f("PortLoopingErrors", 112, 16, Fmt::Uint),
];

/// PortSamplesControl (`mad_dump_portsamples_control`).
pub const PORT_SAMPLES_CONTROL: &[Field] = &[
    f("OpCode", 0, 8, Fmt::Hex),
    f("PortSelect", 8, 8, Fmt::Uint),
    f("Tick", 16, 8, Fmt::Hex),
    f("CounterWidth", 29, 3, Fmt::Uint),
    f("CounterMask0", 34, 3, Fmt::Hex),
    f("CounterMasks1to9", 37, 27, Fmt::Hex),
    f("CounterMasks10to14", 65, 15, Fmt::Hex),
    f("SampleMechanisms", 80, 8, Fmt::Uint),
    f("SampleStatus", 94, 2, Fmt::Uint),
    f("OptionMask", 96, 64, Fmt::Hex),
    f("VendorMask", 160, 64, Fmt::Hex),
    f("SampleStart", 224, 32, Fmt::Uint),
    f("SampleInterval", 256, 32, Fmt::Uint),
    f("Tag", 288, 16, Fmt::Hex),
    f("CounterSelect0", 304, 16, Fmt::Hex),
    f("CounterSelect1", 320, 16, Fmt::Hex),
    f("CounterSelect2", 336, 16, Fmt::Hex),
    f("CounterSelect3", 352, 16, Fmt::Hex),
    f("CounterSelect4", 368, 16, Fmt::Hex),
    f("CounterSelect5", 384, 16, Fmt::Hex),
    f("CounterSelect6", 400, 16, Fmt::Hex),
    f("CounterSelect7", 416, 16, Fmt::Hex),
    f("CounterSelect8", 432, 16, Fmt::Hex),
    f("CounterSelect9", 448, 16, Fmt::Hex),
    f("CounterSelect10", 464, 16, Fmt::Hex),
    f("CounterSelect11", 480, 16, Fmt::Hex),
    f("CounterSelect12", 496, 16, Fmt::Hex),
    f("CounterSelect13", 512, 16, Fmt::Hex),
    f("CounterSelect14", 528, 16, Fmt::Hex),
    f("SamplesOnlyOptionMask", 576, 64, Fmt::Hex),
];

/// PortExtendedSpeedsCounters (`mad_dump_port_ext_speeds_counters`).
pub const PORT_EXT_SPEEDS_COUNTERS: &[Field] = &[
    f("PortSelect", 8, 8, Fmt::Uint),
    f("CounterSelect", 64, 64, Fmt::Hex),
    f("SyncHeaderErrorCounter", 128, 16, Fmt::Uint),
    f("UnknownBlockCounter", 144, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane0", 160, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane1", 176, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane2", 192, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane3", 208, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane4", 224, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane5", 240, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane6", 256, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane7", 272, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane8", 288, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane9", 304, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane10", 320, 16, Fmt::Uint),
    f("ErrorDetectionCounterLane11", 336, 16, Fmt::Uint),
    f("FECCorrectableBlockCtrLane0", 352, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane1", 384, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane2", 416, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane3", 448, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane4", 480, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane5", 512, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane6", 544, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane7", 576, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane8", 608, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane9", 640, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane10", 672, 32, Fmt::Uint),
    f("FECCorrectableBlockCtrLane11", 704, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane0", 736, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane1", 768, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane2", 800, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane3", 832, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane4", 864, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane5", 896, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane6", 928, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane7", 960, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane8", 992, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane9", 1024, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane10", 1056, 32, Fmt::Uint),
    f("FECUncorrectableBlockCtrLane11", 1088, 32, Fmt::Uint),
];

/// PortExtendedSpeedsCounters with RS-FEC active (`mad_dump_port_ext_speeds_counters_rsfec_active`).
pub const PORT_EXT_SPEEDS_COUNTERS_RSFEC: &[Field] = &[
    f("PortSelect", 8, 8, Fmt::Uint),
    f("CounterSelect", 64, 64, Fmt::Hex),
    f("SyncHeaderErrorCounter", 128, 16, Fmt::Uint),
    f("UnknownBlockCounter", 144, 16, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane0", 352, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane1", 384, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane2", 416, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane3", 448, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane4", 480, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane5", 512, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane6", 544, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane7", 576, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane8", 608, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane9", 640, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane10", 672, 32, Fmt::Uint),
    f("FECCorrectableSymbolCtrLane11", 704, 32, Fmt::Uint),
    f("PortFECCorrectableBlockCtr", 1120, 32, Fmt::Uint),
    f("PortFECUncorrectableBlockCtr", 1152, 32, Fmt::Uint),
    f("PortFECCorrectedSymbolCtr", 1184, 32, Fmt::Uint),
];

/// PortOpRcvCounters' counters (after [`SELECTS`]).
pub const PORT_OP_RCV_COUNTERS: &[Field] = &[
    f("PortOpRcvPkts", 32, 32, Fmt::Uint),
    f("PortOpRcvData", 64, 32, Fmt::Uint),
];

/// PortFlowCtlCounters' counters (after [`SELECTS`]).
pub const PORT_FLOW_CTL_COUNTERS: &[Field] = &[
    f("PortXmitFlowPkts", 32, 32, Fmt::Uint),
    f("PortRcvFlowPkts", 64, 32, Fmt::Uint),
];

/// PortVLOpPackets' counters (after [`SELECTS`]).
pub const PORT_VL_OP_PACKETS: &[Field] = &[
    f("PortVLOpPackets0", 32, 16, Fmt::Uint),
    f("PortVLOpPackets1", 48, 16, Fmt::Uint),
    f("PortVLOpPackets2", 64, 16, Fmt::Uint),
    f("PortVLOpPackets3", 80, 16, Fmt::Uint),
    f("PortVLOpPackets4", 96, 16, Fmt::Uint),
    f("PortVLOpPackets5", 112, 16, Fmt::Uint),
    f("PortVLOpPackets6", 128, 16, Fmt::Uint),
    f("PortVLOpPackets7", 144, 16, Fmt::Uint),
    f("PortVLOpPackets8", 160, 16, Fmt::Uint),
    f("PortVLOpPackets9", 176, 16, Fmt::Uint),
    f("PortVLOpPackets10", 192, 16, Fmt::Uint),
    f("PortVLOpPackets11", 208, 16, Fmt::Uint),
    f("PortVLOpPackets12", 224, 16, Fmt::Uint),
    f("PortVLOpPackets13", 240, 16, Fmt::Uint),
    f("PortVLOpPackets14", 256, 16, Fmt::Uint),
    f("PortVLOpPackets15", 272, 16, Fmt::Uint),
];

/// PortVLOpData's counters (after [`SELECTS`]).
pub const PORT_VL_OP_DATA: &[Field] = &[
    f("PortVLOpData0", 32, 32, Fmt::Uint),
    f("PortVLOpData1", 64, 32, Fmt::Uint),
    f("PortVLOpData2", 96, 32, Fmt::Uint),
    f("PortVLOpData3", 128, 32, Fmt::Uint),
    f("PortVLOpData4", 160, 32, Fmt::Uint),
    f("PortVLOpData5", 192, 32, Fmt::Uint),
    f("PortVLOpData6", 224, 32, Fmt::Uint),
    f("PortVLOpData7", 256, 32, Fmt::Uint),
    f("PortVLOpData8", 288, 32, Fmt::Uint),
    f("PortVLOpData9", 320, 32, Fmt::Uint),
    f("PortVLOpData10", 352, 32, Fmt::Uint),
    f("PortVLOpData11", 384, 32, Fmt::Uint),
    f("PortVLOpData12", 416, 32, Fmt::Uint),
    f("PortVLOpData13", 448, 32, Fmt::Uint),
    f("PortVLOpData14", 480, 32, Fmt::Uint),
    f("PortVLOpData15", 512, 32, Fmt::Uint),
];

/// PortVLXmitFlowCtlUpdateErrors' counters (after [`SELECTS`]).
pub const PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS: &[Field] = &[
    f("PortVLXmitFlowCtlUpdateErrors0", 32, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors1", 34, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors2", 36, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors3", 38, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors4", 40, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors5", 42, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors6", 44, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors7", 46, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors8", 48, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors9", 50, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors10", 52, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors11", 54, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors12", 56, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors13", 58, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors14", 60, 2, Fmt::Uint),
    f("PortVLXmitFlowCtlUpdateErrors15", 62, 2, Fmt::Uint),
];

/// PortVLXmitWaitCounters' counters (after [`SELECTS`]).
pub const PORT_VL_XMIT_WAIT_COUNTERS: &[Field] = &[
    f("PortVLXmitWait0", 32, 16, Fmt::Uint),
    f("PortVLXmitWait1", 48, 16, Fmt::Uint),
    f("PortVLXmitWait2", 64, 16, Fmt::Uint),
    f("PortVLXmitWait3", 80, 16, Fmt::Uint),
    f("PortVLXmitWait4", 96, 16, Fmt::Uint),
    f("PortVLXmitWait5", 112, 16, Fmt::Uint),
    f("PortVLXmitWait6", 128, 16, Fmt::Uint),
    f("PortVLXmitWait7", 144, 16, Fmt::Uint),
    f("PortVLXmitWait8", 160, 16, Fmt::Uint),
    f("PortVLXmitWait9", 176, 16, Fmt::Uint),
    f("PortVLXmitWait10", 192, 16, Fmt::Uint),
    f("PortVLXmitWait11", 208, 16, Fmt::Uint),
    f("PortVLXmitWait12", 224, 16, Fmt::Uint),
    f("PortVLXmitWait13", 240, 16, Fmt::Uint),
    f("PortVLXmitWait14", 256, 16, Fmt::Uint),
    f("PortVLXmitWait15", 272, 16, Fmt::Uint),
];

/// SwPortVLCongestion's counters (after [`SELECTS`]).
pub const SW_PORT_VL_CONGESTION: &[Field] = &[
    f("SWPortVLCongestion0", 32, 16, Fmt::Uint),
    f("SWPortVLCongestion1", 48, 16, Fmt::Uint),
    f("SWPortVLCongestion2", 64, 16, Fmt::Uint),
    f("SWPortVLCongestion3", 80, 16, Fmt::Uint),
    f("SWPortVLCongestion4", 96, 16, Fmt::Uint),
    f("SWPortVLCongestion5", 112, 16, Fmt::Uint),
    f("SWPortVLCongestion6", 128, 16, Fmt::Uint),
    f("SWPortVLCongestion7", 144, 16, Fmt::Uint),
    f("SWPortVLCongestion8", 160, 16, Fmt::Uint),
    f("SWPortVLCongestion9", 176, 16, Fmt::Uint),
    f("SWPortVLCongestion10", 192, 16, Fmt::Uint),
    f("SWPortVLCongestion11", 208, 16, Fmt::Uint),
    f("SWPortVLCongestion12", 224, 16, Fmt::Uint),
    f("SWPortVLCongestion13", 240, 16, Fmt::Uint),
    f("SWPortVLCongestion14", 256, 16, Fmt::Uint),
    f("SWPortVLCongestion15", 272, 16, Fmt::Uint),
];

/// PortRcvConCtrl's counters (after [`SELECTS`]).
pub const PORT_RCV_CON_CTRL: &[Field] = &[
    f("PortPktRcvFECN", 32, 32, Fmt::Uint),
    f("PortPktRcvBECN", 64, 32, Fmt::Uint),
];

/// PortSLRcvFECN's counters (after [`SELECTS`]).
pub const PORT_SL_RCV_FECN: &[Field] = &[
    f("PortSLRcvFECN0", 32, 32, Fmt::Uint),
    f("PortSLRcvFECN1", 64, 32, Fmt::Uint),
    f("PortSLRcvFECN2", 96, 32, Fmt::Uint),
    f("PortSLRcvFECN3", 128, 32, Fmt::Uint),
    f("PortSLRcvFECN4", 160, 32, Fmt::Uint),
    f("PortSLRcvFECN5", 192, 32, Fmt::Uint),
    f("PortSLRcvFECN6", 224, 32, Fmt::Uint),
    f("PortSLRcvFECN7", 256, 32, Fmt::Uint),
    f("PortSLRcvFECN8", 288, 32, Fmt::Uint),
    f("PortSLRcvFECN9", 320, 32, Fmt::Uint),
    f("PortSLRcvFECN10", 352, 32, Fmt::Uint),
    f("PortSLRcvFECN11", 384, 32, Fmt::Uint),
    f("PortSLRcvFECN12", 416, 32, Fmt::Uint),
    f("PortSLRcvFECN13", 448, 32, Fmt::Uint),
    f("PortSLRcvFECN14", 480, 32, Fmt::Uint),
    f("PortSLRcvFECN15", 512, 32, Fmt::Uint),
];

/// PortSLRcvBECN's counters (after [`SELECTS`]).
pub const PORT_SL_RCV_BECN: &[Field] = &[
    f("PortSLRcvBECN0", 32, 32, Fmt::Uint),
    f("PortSLRcvBECN1", 64, 32, Fmt::Uint),
    f("PortSLRcvBECN2", 96, 32, Fmt::Uint),
    f("PortSLRcvBECN3", 128, 32, Fmt::Uint),
    f("PortSLRcvBECN4", 160, 32, Fmt::Uint),
    f("PortSLRcvBECN5", 192, 32, Fmt::Uint),
    f("PortSLRcvBECN6", 224, 32, Fmt::Uint),
    f("PortSLRcvBECN7", 256, 32, Fmt::Uint),
    f("PortSLRcvBECN8", 288, 32, Fmt::Uint),
    f("PortSLRcvBECN9", 320, 32, Fmt::Uint),
    f("PortSLRcvBECN10", 352, 32, Fmt::Uint),
    f("PortSLRcvBECN11", 384, 32, Fmt::Uint),
    f("PortSLRcvBECN12", 416, 32, Fmt::Uint),
    f("PortSLRcvBECN13", 448, 32, Fmt::Uint),
    f("PortSLRcvBECN14", 480, 32, Fmt::Uint),
    f("PortSLRcvBECN15", 512, 32, Fmt::Uint),
];

/// PortXmitConCtrl's counters (after [`SELECTS`]).
pub const PORT_XMIT_CON_CTRL: &[Field] = &[f("PortXmitTimeCong", 32, 32, Fmt::Uint)];

/// PortVLXmitTimeCong's counters (after [`SELECTS`]).
pub const PORT_VL_XMIT_TIME_CONG: &[Field] = &[
    f("PortVLXmitTimeCong0", 32, 32, Fmt::Uint),
    f("PortVLXmitTimeCong1", 64, 32, Fmt::Uint),
    f("PortVLXmitTimeCong2", 96, 32, Fmt::Uint),
    f("PortVLXmitTimeCong3", 128, 32, Fmt::Uint),
    f("PortVLXmitTimeCong4", 160, 32, Fmt::Uint),
    f("PortVLXmitTimeCong5", 192, 32, Fmt::Uint),
    f("PortVLXmitTimeCong6", 224, 32, Fmt::Uint),
    f("PortVLXmitTimeCong7", 256, 32, Fmt::Uint),
    f("PortVLXmitTimeCong8", 288, 32, Fmt::Uint),
    f("PortVLXmitTimeCong9", 320, 32, Fmt::Uint),
    f("PortVLXmitTimeCong10", 352, 32, Fmt::Uint),
    f("PortVLXmitTimeCong11", 384, 32, Fmt::Uint),
    f("PortVLXmitTimeCong12", 416, 32, Fmt::Uint),
    f("PortVLXmitTimeCong13", 448, 32, Fmt::Uint),
    f("PortVLXmitTimeCong14", 480, 32, Fmt::Uint),
];

/// Writes `value` into the `width` bits at IBA bit `offset` of `data` (the inverse of
/// [`get_bits`](super::get_bits); bits past the end of `data` are dropped).
pub fn put_bits(data: &mut [u8], offset: u16, width: u8, value: u64) {
    let width = usize::from(width.min(64));
    for i in 0..width {
        let bit = usize::from(offset) + i;
        let v = (value >> (width - 1 - i)) & 1;
        if let Some(b) = data.get_mut(bit / 8) {
            let mask = 1u8 << (7 - bit % 8);
            if v == 1 {
                *b |= mask;
            } else {
                *b &= !mask;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::get_bits;

    #[test]
    fn put_then_get() {
        let mut d = [0u8; 16];
        put_bits(&mut d, 5, 7, 0x55);
        assert_eq!(get_bits(&d, 5, 7), 0x55);
        put_bits(&mut d, 64, 64, u64::MAX - 1);
        assert_eq!(get_bits(&d, 64, 64), u64::MAX - 1);
        put_bits(&mut d, 120, 16, 0xffff); // half past the end
        assert_eq!(d[15], 0xff);
    }

    #[test]
    fn libibmad_qp1dropped_reads_vl15dropped() {
        let mut d = [0u8; 192];
        put_bits(&mut d, 176, 16, 7);
        let text = crate::dump::dump_fields(&d, PORT_COUNTERS);
        assert!(text.contains("QP1Dropped:......................7\n"));
        assert!(text.contains("VL15Dropped:.....................7\n"));
    }
}
