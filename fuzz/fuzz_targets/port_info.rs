//! `ibmad::PortInfo`: parse never panics; emit(parse(x)) reproduces x; the speed and rate helpers never panic.
#![no_main]

mad_fuzz::repr_target!(ibmad::PortInfo, |pi, _data| {
    let _ = (
        pi.link_speed(),
        pi.rate_gbps(),
        pi.has_capability(ibmad::attr::cap::IS_SM),
    );
    let _ = (
        pi.port_state.to_string(),
        pi.port_physical_state.to_string(),
    );
    let _ = (
        pi.link_width_active.to_string(),
        pi.neighbor_mtu.to_string(),
    );
});
