//! `Port::open` under `UMAD_IBSIM`: the simulator decides the port, so a CA or port the
//! caller named that is not the one opened is refused with a message saying why, instead of
//! being silently ignored. (One test in its own binary: it sets process environment.)

use ibsim_harness::{example_fabric, require_ibsim, Ibsim};
use umad::{Error, Port, TransportKind};

#[test]
fn umad_ibsim_refuses_a_ca_or_port_it_would_ignore() {
    if !require_ibsim("umad_ibsim_refuses_a_ca_or_port_it_would_ignore") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    std::env::set_var("UMAD_IBSIM", sim.socket_name());
    std::env::set_var("UMAD_IBSIM_NODE", "H-host2");
    let port = Port::open(None, 0).expect("the simulator's port");
    assert_eq!(
        port.transport_kind(),
        TransportKind::MadLayer { carrier: "ibsim" }
    );
    let (ca, num) = (port.ca_name().to_string(), port.port_num());
    drop(port);
    // Naming exactly that port is fine.
    Port::open(Some(&ca), num).expect("the same CA and port by name");
    Port::open_smi(Some(&ca), 0).expect("the same CA, any port");
    for (c, p) in [
        (Some("mlx5_0"), 0),
        (None, num + 1),
        (Some(ca.as_str()), num + 1),
    ] {
        let err = Port::open(c, p).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("UMAD_IBSIM is set"), "{text}");
        assert!(text.contains("unset UMAD_IBSIM"), "{text}");
    }
    std::env::remove_var("UMAD_IBSIM");
    std::env::remove_var("UMAD_IBSIM_NODE");
}
