//! Unit tests and fixture-tree tests for device enumeration (architecture rule 2).
//!
//! Fixture trees are built with `std::fs` under a unique temp directory; the code under test
//! reads them only through `sys` (libc open/read/opendir).

use super::*;
use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fake `/sys` + `/dev` tree under a unique temp directory, removed on drop.
struct Fixture {
    root: PathBuf,
}

/// What to write for one port.
#[derive(Clone)]
struct PortSpec {
    state: &'static str,
    phys: &'static str,
    link_layer: Option<&'static str>,
    cap_mask: &'static str,
    lid: &'static str,
    rate: &'static str,
    guid: u64,
    pkeys: Vec<&'static str>,
}

impl PortSpec {
    fn active(guid: u64) -> PortSpec {
        PortSpec {
            state: "4: ACTIVE",
            phys: "5: LinkUp",
            link_layer: Some("InfiniBand"),
            cap_mask: "0x02510868",
            lid: "0x1a",
            rate: "40 Gb/sec (4X QDR)",
            guid,
            pkeys: vec!["0xffff", "0x7fff"],
        }
    }
    fn state(mut self, state: &'static str, phys: &'static str) -> PortSpec {
        self.state = state;
        self.phys = phys;
        self
    }
    fn down(guid: u64) -> PortSpec {
        PortSpec::active(guid)
            .state("1: DOWN", "2: Polling")
            .lid("0x0")
    }
    fn disabled(guid: u64) -> PortSpec {
        PortSpec::active(guid)
            .state("1: DOWN", "3: Disabled")
            .lid("0x0")
    }
    fn link_up(guid: u64) -> PortSpec {
        PortSpec::active(guid).state("2: INIT", "5: LinkUp")
    }
    fn ethernet(mut self) -> PortSpec {
        self.link_layer = Some("Ethernet");
        self
    }
    fn no_link_layer(mut self) -> PortSpec {
        self.link_layer = None;
        self
    }
    fn cap_mask(mut self, cap_mask: &'static str) -> PortSpec {
        self.cap_mask = cap_mask;
        self
    }
    fn lid(mut self, lid: &'static str) -> PortSpec {
        self.lid = lid;
        self
    }
}

/// `0002:c903:0001:2345` form of a GUID.
fn guid_text(g: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        g >> 48,
        (g >> 32) & 0xffff,
        (g >> 16) & 0xffff,
        g & 0xffff
    )
}

const CA_GUID: u64 = 0x0002_c903_0001_2345;
const GID_PREFIX: u64 = 0xfe80_0000_0000_0000;
const SMI_DISABLED_CAP: &str = "0x02510c68"; // 0x02510868 | 0x400

impl Fixture {
    fn new() -> Fixture {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let root =
            std::env::temp_dir().join(format!("umad-device-test-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for d in [
            "sys/class/infiniband",
            "sys/class/infiniband_mad",
            "dev/infiniband",
        ] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        Fixture { root }
    }

    fn devices(&self) -> Devices {
        Devices::with_paths(Paths::with_root(&self.root))
    }

    fn class(&self, rel: &str) -> PathBuf {
        self.root.join("sys/class/infiniband").join(rel)
    }

    fn write(&self, path: &Path, content: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn remove(&self, path: &Path) {
        fs::remove_file(path).unwrap();
    }

    /// A device directory with the files libibumad reads, and an empty `ports` directory.
    fn add_ca_at(&self, dir: &Path, node_type: &str, node_guid: u64) {
        fs::create_dir_all(dir.join("ports")).unwrap();
        self.write(&dir.join("node_type"), &format!("{node_type}\n"));
        self.write(&dir.join("fw_ver"), "20.31.1014\n");
        self.write(&dir.join("hw_rev"), "0x0\n");
        self.write(&dir.join("hca_type"), "MT4123\n");
        self.write(
            &dir.join("node_guid"),
            &format!("{}\n", guid_text(node_guid)),
        );
        self.write(
            &dir.join("sys_image_guid"),
            &format!("{}\n", guid_text(node_guid)),
        );
    }

    fn add_ca(&self, name: &str, node_type: &str, node_guid: u64) {
        self.add_ca_at(&self.class(name), node_type, node_guid);
    }

    fn add_port_at(&self, ca_dir: &Path, n: u32, spec: &PortSpec) {
        let dir = ca_dir.join("ports").join(n.to_string());
        self.write(&dir.join("lid_mask_count"), "0\n");
        self.write(&dir.join("sm_lid"), "0x1\n");
        self.write(&dir.join("sm_sl"), "0\n");
        self.write(&dir.join("lid"), &format!("{}\n", spec.lid));
        self.write(&dir.join("state"), &format!("{}\n", spec.state));
        self.write(&dir.join("phys_state"), &format!("{}\n", spec.phys));
        self.write(&dir.join("rate"), &format!("{}\n", spec.rate));
        self.write(&dir.join("cap_mask"), &format!("{}\n", spec.cap_mask));
        if let Some(ll) = spec.link_layer {
            self.write(&dir.join("link_layer"), &format!("{ll}\n"));
        }
        self.write(
            &dir.join("gids/0"),
            &format!("fe80:0000:0000:0000:{}\n", guid_text(spec.guid)),
        );
        fs::create_dir_all(dir.join("pkeys")).unwrap();
        for (i, v) in spec.pkeys.iter().enumerate() {
            self.write(&dir.join("pkeys").join(i.to_string()), &format!("{v}\n"));
        }
    }

    fn add_port(&self, ca: &str, n: u32, spec: &PortSpec) {
        self.add_port_at(&self.class(ca), n, spec);
    }

    /// `infiniband_mad/umad<id>/{ibdev,port}` plus `issm<id>`.
    fn add_umad(&self, id: u32, ibdev: &str, port: u32) {
        let mad = self.root.join("sys/class/infiniband_mad");
        self.write(&mad.join(format!("umad{id}/ibdev")), &format!("{ibdev}\n"));
        self.write(&mad.join(format!("umad{id}/port")), &format!("{port}\n"));
        self.write(&mad.join(format!("issm{id}/ibdev")), &format!("{ibdev}\n"));
        self.write(&mad.join(format!("issm{id}/port")), &format!("{port}\n"));
    }

    fn abi(&self, content: &str) {
        self.write(
            &self.root.join("sys/class/infiniband_mad/abi_version"),
            content,
        );
    }

    /// The standard 2-port HCA `mlx4_0`: port 1 down (Polling), port 2 ACTIVE.
    fn two_port_hca(&self) {
        self.add_ca("mlx4_0", "1: CA", CA_GUID);
        self.add_port("mlx4_0", 1, &PortSpec::down(CA_GUID + 1));
        self.add_port("mlx4_0", 2, &PortSpec::active(CA_GUID + 2));
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

#[track_caller]
fn expect_no_device(r: Result<(String, u32)>) -> String {
    match r {
        Err(Error::NoDevice { reason, .. }) => reason,
        other => panic!("expected NoDevice, got {other:?}"),
    }
}

#[track_caller]
fn expect_sysfs_path(r: Result<impl std::fmt::Debug>) -> PathBuf {
    match r {
        Err(Error::Sysfs { path, .. }) => path,
        other => panic!("expected a Sysfs error, got {other:?}"),
    }
}

#[track_caller]
fn expect_parse(r: Result<impl std::fmt::Debug>) -> (PathBuf, String) {
    match r {
        Err(e @ Error::Parse { .. }) => {
            let msg = e.to_string();
            let Error::Parse { path, .. } = e else {
                unreachable!()
            };
            (path, msg)
        }
        other => panic!("expected a Parse error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Pure parts.

#[test]
fn paths_default_and_with_root() {
    let d = Paths::default();
    assert_eq!(d.class_dir, Path::new("/sys/class/infiniband"));
    assert_eq!(d.mad_dir, Path::new("/sys/class/infiniband_mad"));
    assert_eq!(d.dev_dir, Path::new("/dev/infiniband"));
    assert_eq!(Devices::new().paths(), &d);
    let r = Paths::with_root(Path::new("/tmp/x"));
    assert_eq!(r.class_dir, Path::new("/tmp/x/sys/class/infiniband"));
    assert_eq!(r.mad_dir, Path::new("/tmp/x/sys/class/infiniband_mad"));
    assert_eq!(r.dev_dir, Path::new("/tmp/x/dev/infiniband"));
}

#[test]
fn node_type_codes() {
    let all = [
        (1, NodeType::Ca, true),
        (2, NodeType::Switch, true),
        (3, NodeType::Router, true),
        (4, NodeType::Rnic, false),
        (5, NodeType::Usnic, false),
        (6, NodeType::UsnicUdp, false),
        (0, NodeType::Unknown(0), false),
        (7, NodeType::Unknown(7), false),
    ];
    for (code, t, ib) in all {
        assert_eq!(NodeType::from(code), t);
        assert_eq!(t.code(), code);
        assert_eq!(t.is_ib(), ib, "{t:?}");
    }
}

#[test]
fn validate_ca_name_rules() {
    for ok in ["mlx5_0", "ibp0s8", "a.b", "..x", "x..", "mlx5_bond_0"] {
        assert!(validate_ca_name(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        ".",
        "..",
        "../mlx5_0",
        "mlx5_0/..",
        "a/b",
        "/",
        "a\0b",
        "../../etc",
    ] {
        match validate_ca_name(bad) {
            Err(Error::InvalidCaName { name, .. }) => assert_eq!(name, bad),
            other => panic!("{bad:?} accepted: {other:?}"),
        }
    }
}

fn port(n: u32, state: u32, phys: u32, ll: &str, cap_mask: u32) -> PortAttrs {
    PortAttrs {
        ca_name: "x".into(),
        port_num: n,
        base_lid: n,
        lmc: 0,
        sm_lid: 1,
        sm_sl: 0,
        state,
        phys_state: phys,
        rate: 40,
        cap_mask,
        gid_prefix: GID_PREFIX,
        port_guid: 0x100 + u64::from(n),
        pkeys: vec![0xffff],
        link_layer: ll.into(),
    }
}

fn ca_of(node_type: NodeType, ports: Vec<PortAttrs>) -> Ca {
    Ca {
        name: "x".into(),
        node_type,
        fw_ver: String::new(),
        hw_ver: String::new(),
        ca_type: String::new(),
        node_guid: 1,
        system_guid: 1,
        ports,
        unreadable: Vec::new(),
    }
}

#[test]
fn choose_port_rules() {
    use PortChoice::{Active, Usable};
    let ib = "InfiniBand";
    // Explicit port.
    let ca = ca_of(
        NodeType::Ca,
        vec![
            port(1, 1, 2, ib, 0),
            port(2, 4, 5, ib, 0),
            port(3, 1, 3, ib, 0),
        ],
    );
    assert_eq!(choose_port(&ca, 1, false), Ok(Usable(1)));
    assert_eq!(choose_port(&ca, 2, false), Ok(Active(2)));
    assert_eq!(
        choose_port(&ca, 3, false).unwrap_err(),
        "port 3 is Disabled (phys_state 3)"
    );
    assert_eq!(
        choose_port(&ca, 4, false).unwrap_err(),
        "port 4 does not exist (ports: 1, 2, 3)"
    );
    // Auto: active wins even after a LinkUp one.
    assert_eq!(choose_port(&ca, 0, false), Ok(Active(2)));
    // LinkUp beats an earlier Polling port.
    let ca = ca_of(
        NodeType::Ca,
        vec![port(1, 1, 2, ib, 0), port(2, 2, 5, ib, 0)],
    );
    assert_eq!(choose_port(&ca, 0, false), Ok(Usable(2)));
    // Pass 2 ignores the link layer.
    let ca = ca_of(NodeType::Ca, vec![port(1, 4, 5, "Ethernet", 0)]);
    assert_eq!(choose_port(&ca, 0, false), Ok(Usable(1)));
    assert_eq!(
        choose_port(&ca, 1, false).unwrap_err(),
        "port 1 link layer is Ethernet"
    );
    // SMI filter.
    let ca = ca_of(
        NodeType::Ca,
        vec![port(1, 4, 5, ib, 0x400), port(2, 2, 5, ib, 0)],
    );
    assert_eq!(choose_port(&ca, 0, false), Ok(Active(1)));
    assert_eq!(choose_port(&ca, 0, true), Ok(Usable(2)));
    assert!(choose_port(&ca, 1, true).unwrap_err().contains("no SMI"));
    // Switch: port 0 whatever was asked.
    let sw = ca_of(NodeType::Switch, vec![port(0, 1, 3, "Ethernet", 0x400)]);
    assert_eq!(choose_port(&sw, 0, true), Ok(Active(0)));
    assert_eq!(choose_port(&sw, 7, false), Ok(Active(0)));
    // Nothing usable.
    let ca = ca_of(NodeType::Ca, vec![]);
    assert_eq!(choose_port(&ca, 0, false).unwrap_err(), "it has no ports");
    let ca = ca_of(
        NodeType::Ca,
        vec![port(1, 1, 3, ib, 0), port(2, 4, 5, ib, 0x400)],
    );
    assert_eq!(
        choose_port(&ca, 0, true).unwrap_err(),
        "no usable port: port 1 (InfiniBand) is Disabled (phys_state 3), port 2 has no SMI (IsSMDisabled capability bit set)"
    );
}

#[test]
fn ca_port_lookup_and_num_ports() {
    let ca = ca_of(
        NodeType::Ca,
        vec![port(1, 4, 5, "IB", 0), port(2, 1, 2, "IB", 0x400)],
    );
    assert_eq!(ca.num_ports(), 2);
    assert_eq!(ca.port(2).map(|p| p.port_num), Some(2));
    assert!(ca.port(0).is_none());
    assert!(ca.port(3).is_none());
    let p1 = ca.port(1).unwrap();
    assert!(p1.is_ib() && p1.is_active() && !p1.is_smi_disabled());
    let p2 = ca.port(2).unwrap();
    assert!(!p2.is_active() && p2.is_smi_disabled());
    assert_eq!(ca_of(NodeType::Ca, vec![]).num_ports(), 0);
    assert!(!port(1, 4, 5, "Ethernet", 0).is_ib());
    assert!(port(1, 4, 5, "InfiniBand", 0).is_ib());
}

// ---------------------------------------------------------------------------------------------
// Fixture trees.

#[test]
fn two_port_hca_reads_all_attributes() {
    let fx = Fixture::new();
    fx.two_port_hca();
    let ca = fx.devices().ca("mlx4_0").unwrap();
    assert_eq!(ca.name, "mlx4_0");
    assert_eq!(ca.node_type, NodeType::Ca);
    assert_eq!(ca.fw_ver, "20.31.1014");
    assert_eq!(ca.hw_ver, "0x0");
    assert_eq!(ca.ca_type, "MT4123");
    assert_eq!(ca.node_guid, 0x0002_c903_0001_2345);
    assert_eq!(ca.system_guid, 0x0002_c903_0001_2345);
    assert_eq!(ca.num_ports(), 2);
    assert_eq!(
        ca.ports.iter().map(|p| p.port_num).collect::<Vec<_>>(),
        [1, 2]
    );
    let p2 = ca.port(2).unwrap();
    assert_eq!(
        p2,
        &PortAttrs {
            ca_name: "mlx4_0".into(),
            port_num: 2,
            base_lid: 0x1a,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            state: 4,
            phys_state: 5,
            rate: 40,
            cap_mask: 0x0251_0868,
            gid_prefix: GID_PREFIX,
            port_guid: 0x0002_c903_0001_2347,
            pkeys: vec![0xffff, 0x7fff],
            link_layer: "InfiniBand".into(),
        }
    );
    let p1 = ca.port(1).unwrap();
    assert_eq!((p1.state, p1.phys_state, p1.base_lid), (1, 2, 0));
    // The per-port reader gives the same thing.
    assert_eq!(&fx.devices().port("mlx4_0", 2).unwrap(), p2);
    assert_eq!(fx.devices().ca_names().unwrap(), ["mlx4_0"]);
}

#[test]
fn two_port_hca_default_selection_picks_active_port() {
    let fx = Fixture::new();
    fx.two_port_hca();
    let d = fx.devices();
    assert_eq!(d.resolve(None, 0, false).unwrap(), ("mlx4_0".to_owned(), 2));
    assert_eq!(
        d.resolve(Some("mlx4_0"), 0, false).unwrap(),
        ("mlx4_0".to_owned(), 2)
    );
    assert_eq!(d.resolve(None, 2, false).unwrap(), ("mlx4_0".to_owned(), 2));
}

#[test]
fn two_port_hca_explicit_down_port_is_usable() {
    let fx = Fixture::new();
    fx.two_port_hca();
    let d = fx.devices();
    // Name + port: taken as is.
    assert_eq!(
        d.resolve(Some("mlx4_0"), 1, false).unwrap(),
        ("mlx4_0".to_owned(), 1)
    );
    // No name + port 1: port 1 is DOWN but Polling (not Disabled) → "usable" (C's 0), returned.
    assert_eq!(d.resolve(None, 1, false).unwrap(), ("mlx4_0".to_owned(), 1));
    let ca = d.ca("mlx4_0").unwrap();
    assert_eq!(choose_port(&ca, 1, false), Ok(PortChoice::Usable(1)));
    let p = d.port("mlx4_0", 1).unwrap();
    assert_eq!((p.state, p.phys_state), (1, 2));
    assert!(!p.is_active());
    // A port that does not exist is refused when the CA is searched.
    let reason = expect_no_device(d.resolve(None, 3, false));
    assert_eq!(reason, "mlx4_0: port 3 does not exist (ports: 1, 2)");
}

#[test]
fn switch_uses_port_zero() {
    let fx = Fixture::new();
    fx.add_ca("switch0", "2: switch", 0x0008_f105_0020_0000);
    // Even a port 0 that is down and has an odd link layer: a switch is always port 0.
    fx.add_port(
        "switch0",
        0,
        &PortSpec::down(0x0008_f105_0020_0000).no_link_layer(),
    );
    let d = fx.devices();
    let ca = d.ca("switch0").unwrap();
    assert_eq!(ca.node_type, NodeType::Switch);
    assert_eq!(ca.num_ports(), 0);
    assert_eq!(ca.ports.len(), 1);
    assert_eq!(ca.ports[0].port_num, 0);
    assert_eq!(ca.ports[0].port_guid, 0x0008_f105_0020_0000);
    for requested in [0, 1, 3, 36] {
        assert_eq!(
            d.resolve(None, requested, false).unwrap(),
            ("switch0".to_owned(), 0),
            "port {requested}"
        );
        assert_eq!(
            d.resolve(None, requested, true).unwrap(),
            ("switch0".to_owned(), 0)
        );
    }
    assert_eq!(
        d.resolve(Some("switch0"), 0, false).unwrap(),
        ("switch0".to_owned(), 0)
    );
    // Name + explicit port: as is, like libibumad (the open then fails if there is no umad).
    assert_eq!(
        d.resolve(Some("switch0"), 5, false).unwrap(),
        ("switch0".to_owned(), 5)
    );
}

#[test]
fn roce_port_refused_with_link_layer_in_message() {
    let fx = Fixture::new();
    fx.add_ca("mlx5_0", "1: CA", CA_GUID);
    fx.add_port("mlx5_0", 1, &PortSpec::active(CA_GUID + 1).ethernet());
    let d = fx.devices();
    assert_eq!(d.port("mlx5_0", 1).unwrap().link_layer, "Ethernet");
    assert!(!d.port("mlx5_0", 1).unwrap().is_ib());
    let err = d.resolve(None, 1, false).unwrap_err();
    match &err {
        Error::NoDevice { reason, path } => {
            assert_eq!(reason, "mlx5_0: port 1 link layer is Ethernet");
            assert_eq!(path.as_deref(), Some(d.paths().class_dir.as_path()));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        err.to_string().contains("port 1 link layer is Ethernet"),
        "{err}"
    );
    // libibumad quirk: an explicit name + port is taken as is, no link-layer check.
    assert_eq!(
        d.resolve(Some("mlx5_0"), 1, false).unwrap(),
        ("mlx5_0".to_owned(), 1)
    );
}

#[test]
fn roce_only_hca_picked_in_pass_two() {
    // HEAD's resolve_ca_port: pass 1 skips the Ethernet port; pass 2 does not check the link
    // layer and takes the first port that is not Disabled. (Checked against libibumad 44.0:
    // umad_get_port(NULL, 0) returns eth0:1 for this tree.)
    let fx = Fixture::new();
    fx.add_ca("mlx5_0", "1: CA", CA_GUID);
    fx.add_port("mlx5_0", 1, &PortSpec::link_up(CA_GUID + 1).ethernet());
    let d = fx.devices();
    assert_eq!(d.resolve(None, 0, false).unwrap(), ("mlx5_0".to_owned(), 1));
    assert_eq!(
        d.resolve(Some("mlx5_0"), 0, false).unwrap(),
        ("mlx5_0".to_owned(), 1)
    );
    assert_eq!(
        choose_port(&d.ca("mlx5_0").unwrap(), 0, false),
        Ok(PortChoice::Usable(1))
    );
    // The same port ACTIVE is still only "usable" (pass 1 never looks at it) ...
    fx.write(&fx.class("mlx5_0/ports/1/state"), "4: ACTIVE\n");
    assert_eq!(
        choose_port(&d.ca("mlx5_0").unwrap(), 0, false),
        Ok(PortChoice::Usable(1))
    );
    // ... so an InfiniBand CA with an ACTIVE port beats it whatever the directory order.
    fx.add_ca("mlx4_0", "1: CA", 0x0002_c903_0009_0000);
    fx.add_port("mlx4_0", 1, &PortSpec::active(0x0002_c903_0009_0001));
    assert_eq!(d.resolve(None, 0, false).unwrap(), ("mlx4_0".to_owned(), 1));
    // Disabled Ethernet port: nothing.
    fs::remove_dir_all(fx.class("mlx4_0")).unwrap();
    fx.write(&fx.class("mlx5_0/ports/1/phys_state"), "3: Disabled\n");
    let reason = expect_no_device(d.resolve(None, 0, false));
    assert_eq!(
        reason,
        "mlx5_0: no usable port: port 1 (Ethernet) is Disabled (phys_state 3)"
    );
    match d.resolve(Some("mlx5_0"), 0, false) {
        Err(Error::NoUsablePort { ca, reason }) => {
            assert_eq!(ca, "mlx5_0");
            assert_eq!(
                reason,
                "no usable port: port 1 (Ethernet) is Disabled (phys_state 3)"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// mlx5_0 (SMI) and mlx5_1 (GSI-only) share port GUID `shared`; mlx5_2 is an ordinary HCA.
fn planarized(fx: &Fixture) -> u64 {
    let shared = 0x0002_c903_00aa_0001;
    fx.add_ca("mlx5_0", "1: CA", 0x0002_c903_00aa_0000);
    fx.add_port("mlx5_0", 1, &PortSpec::active(shared));
    fx.add_ca("mlx5_1", "1: CA", 0x0002_c903_00aa_0010);
    fx.add_port(
        "mlx5_1",
        1,
        &PortSpec::active(shared).cap_mask(SMI_DISABLED_CAP),
    );
    fx.add_ca("mlx5_2", "1: CA", 0x0002_c903_00bb_0000);
    fx.add_port("mlx5_2", 1, &PortSpec::active(0x0002_c903_00bb_0001));
    shared
}

fn pair(smi: Option<&str>, smi_port: u32, gsi: Option<&str>, gsi_port: u32) -> CaPair {
    CaPair {
        smi_name: smi.map(str::to_owned),
        smi_preferred_port: smi_port,
        gsi_name: gsi.map(str::to_owned),
        gsi_preferred_port: gsi_port,
    }
}

#[test]
fn planarized_smi_gsi_pair() {
    let fx = Fixture::new();
    let shared = planarized(&fx);
    let d = fx.devices();
    assert!(d.port("mlx5_1", 1).unwrap().is_smi_disabled());
    assert_eq!(d.port("mlx5_1", 1).unwrap().cap_mask, 0x0251_0c68);
    assert_eq!(d.port("mlx5_0", 1).unwrap().port_guid, shared);
    // Preferred ports stay 0 (libibumad quirk).
    assert_eq!(
        d.smi_gsi_pairs().unwrap(),
        [
            pair(Some("mlx5_0"), 0, Some("mlx5_1"), 0),
            pair(Some("mlx5_2"), 0, Some("mlx5_2"), 0)
        ]
    );
    // By either name of the pair.
    let expected = pair(Some("mlx5_0"), 1, Some("mlx5_1"), 1);
    assert_eq!(
        d.smi_gsi_pair_by_ca_name(Some("mlx5_1"), 0, false).unwrap(),
        expected
    );
    assert_eq!(
        d.smi_gsi_pair_by_ca_name(Some("mlx5_0"), 0, true).unwrap(),
        expected
    );
    assert_eq!(
        d.smi_gsi_pair_by_ca_name(Some("mlx5_1"), 1, true).unwrap(),
        expected
    );
    // No name: the first pair.
    assert_eq!(d.smi_gsi_pair_by_ca_name(None, 0, true).unwrap(), expected);
    assert_eq!(
        d.smi_gsi_pair_by_ca_name(Some("mlx5_2"), 0, false).unwrap(),
        pair(Some("mlx5_2"), 1, Some("mlx5_2"), 1)
    );
    // Default-port resolution with the SMI filter refuses the GSI-only device.
    assert_eq!(
        d.resolve(Some("mlx5_1"), 0, false).unwrap(),
        ("mlx5_1".to_owned(), 1)
    );
    match d.resolve(Some("mlx5_1"), 0, true) {
        Err(Error::NoUsablePort { ca, reason }) => {
            assert_eq!(ca, "mlx5_1");
            assert!(reason.contains("port 1 has no SMI"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
    // Without a name, the GSI-only device is never picked with the filter.
    for port in [0, 1] {
        let (ca, p) = d.resolve(None, port, true).unwrap();
        assert!(ca == "mlx5_0" || ca == "mlx5_2", "{ca}");
        assert_eq!(p, 1);
    }
    // Only the GSI-only device left: nothing with the filter, the device without it.
    fs::remove_dir_all(fx.class("mlx5_0")).unwrap();
    fs::remove_dir_all(fx.class("mlx5_2")).unwrap();
    assert_eq!(
        expect_no_device(d.resolve(None, 0, true)),
        "mlx5_1: no usable port: port 1 has no SMI (IsSMDisabled capability bit set)"
    );
    assert_eq!(
        expect_no_device(d.resolve(None, 1, true)),
        "mlx5_1: port 1 has no SMI (IsSMDisabled capability bit set)"
    );
    assert_eq!(d.resolve(None, 0, false).unwrap(), ("mlx5_1".to_owned(), 1));
}

#[test]
fn planarized_pair_with_gsi_side_first_in_name_order() {
    // The GSI-only device sorts first: the pair is still SMI = the other one.
    let fx = Fixture::new();
    let shared = 0x0002_c903_00cc_0001;
    fx.add_ca("a_gsi", "1: CA", 0x10);
    fx.add_port(
        "a_gsi",
        1,
        &PortSpec::active(shared).cap_mask(SMI_DISABLED_CAP),
    );
    fx.add_ca("b_smi", "1: CA", 0x20);
    fx.add_port("b_smi", 1, &PortSpec::link_up(shared));
    let d = fx.devices();
    assert_eq!(
        d.smi_gsi_pairs().unwrap(),
        [pair(Some("b_smi"), 0, Some("a_gsi"), 0)]
    );
    // GSI side named: its port is used, the "other side" port is looked up on the same device.
    assert_eq!(
        d.smi_gsi_pair_by_ca_name(Some("a_gsi"), 0, false).unwrap(),
        pair(Some("b_smi"), 1, Some("a_gsi"), 1)
    );
}

#[test]
fn legacy_hca_pairs_and_preferred_ports() {
    let fx = Fixture::new();
    // Two-port HCA with distinct port GUIDs: only its first port makes a pair.
    fx.add_ca("mlx4_0", "1: CA", CA_GUID);
    fx.add_port("mlx4_0", 1, &PortSpec::down(CA_GUID + 1));
    fx.add_port("mlx4_0", 2, &PortSpec::link_up(CA_GUID + 2));
    let d = fx.devices();
    assert_eq!(
        d.smi_gsi_pairs().unwrap(),
        [pair(Some("mlx4_0"), 0, Some("mlx4_0"), 0)]
    );
    // Port 0: the first port whose state is above DOWN (port 2, INIT).
    assert_eq!(
        d.smi_gsi_pair_by_ca_name(None, 0, false).unwrap(),
        pair(Some("mlx4_0"), 2, Some("mlx4_0"), 2)
    );
    // Port 1 is DOWN: refused without a name, accepted with one.
    match d.smi_gsi_pair_by_ca_name(None, 1, false) {
        Err(Error::NoDevice { reason, .. }) => assert_eq!(
            reason,
            "mlx4_0 port 1 is not active (state DOWN or missing)"
        ),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        d.smi_gsi_pair_by_ca_name(Some("mlx4_0"), 1, false).unwrap(),
        pair(Some("mlx4_0"), 1, Some("mlx4_0"), 1)
    );
    // A port the device does not have.
    match d.smi_gsi_pair_by_ca_name(Some("mlx4_0"), 3, false) {
        Err(Error::NoDevice { reason, .. }) => {
            assert_eq!(reason, "mlx4_0: port 3 does not exist (ports: 1, 2)")
        }
        other => panic!("unexpected {other:?}"),
    }
    // All ports DOWN.
    fx.write(&fx.class("mlx4_0/ports/2/state"), "1: DOWN\n");
    match d.smi_gsi_pair_by_ca_name(None, 0, false) {
        Err(Error::NoDevice { reason, .. }) => {
            assert_eq!(reason, "mlx4_0 has no active port (all ports DOWN)")
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn smi_gsi_pair_failures() {
    let fx = Fixture::new();
    let d = fx.devices();
    // No device at all: libibumad returns 0 and an all-zero pair; Rust says why.
    match d.smi_gsi_pair_by_ca_name(None, 0, false) {
        Err(Error::NoDevice { reason, .. }) => {
            assert!(reason.contains("no InfiniBand device"), "{reason}")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(d.smi_gsi_pairs().unwrap(), []);
    // A GSI-only device: nothing with the SMI filter.
    fx.add_ca("gsi0", "1: CA", 0x30);
    fx.add_port(
        "gsi0",
        1,
        &PortSpec::active(0x31).cap_mask(SMI_DISABLED_CAP),
    );
    assert_eq!(d.smi_gsi_pairs().unwrap(), [pair(None, 0, Some("gsi0"), 0)]);
    match d.smi_gsi_pair_by_ca_name(None, 0, true) {
        Err(Error::NoDevice { reason, .. }) => {
            assert_eq!(reason, "no SMI/GSI pair has an SMI device")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        d.smi_gsi_pair_by_ca_name(None, 0, false).unwrap(),
        pair(None, 1, Some("gsi0"), 1)
    );
    match d.smi_gsi_pair_by_ca_name(Some("other"), 0, false) {
        Err(Error::NoDevice { reason, .. }) => {
            assert_eq!(reason, "no SMI/GSI pair contains \"other\"")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        d.smi_gsi_pair_by_ca_name(Some("../gsi0"), 0, false),
        Err(Error::InvalidCaName { .. })
    ));
    // A port with GUID 0 is skipped.
    fx.add_ca("zero0", "1: CA", 0x40);
    fx.add_port("zero0", 1, &PortSpec::active(0));
    assert_eq!(d.smi_gsi_pairs().unwrap(), [pair(None, 0, Some("gsi0"), 0)]);
}

#[test]
fn smi_gsi_pairs_max_applies_the_c_limit() {
    let fx = Fixture::new();
    // a: port 1 GUID A (new), b: port 1 GUID B (new), port 2 GUID A (existing).
    fx.add_ca("a", "1: CA", 0x1);
    fx.add_port("a", 1, &PortSpec::active(0xa));
    fx.add_ca("b", "1: CA", 0x2);
    fx.add_port("b", 1, &PortSpec::active(0xb));
    fx.add_port("b", 2, &PortSpec::active(0xa).cap_mask(SMI_DISABLED_CAP));
    let d = fx.devices();
    // GUID A is shared (a:1 and b:2), so a is only the SMI side; b's first port is GUID B.
    assert_eq!(
        d.smi_gsi_pairs().unwrap(),
        [
            pair(Some("a"), 0, None, 0),
            pair(Some("b"), 0, Some("b"), 0)
        ]
    );
    // With max 1, b's port 1 cannot create a pair, so its port 2 (GUID A, shared) is used.
    assert_eq!(
        d.smi_gsi_pairs_max(1).unwrap(),
        [pair(Some("a"), 0, Some("b"), 0)]
    );
    assert_eq!(d.smi_gsi_pairs_max(0).unwrap(), []);
    assert_eq!(d.smi_gsi_pairs_max(5).unwrap(), d.smi_gsi_pairs().unwrap());
}

#[test]
fn hex_lids() {
    let fx = Fixture::new();
    fx.add_ca("mlx4_0", "1: CA", CA_GUID);
    fx.add_port("mlx4_0", 1, &PortSpec::active(CA_GUID + 1).lid("0xBEEF"));
    fx.add_port("mlx4_0", 2, &PortSpec::active(CA_GUID + 2).lid("26"));
    fx.write(&fx.class("mlx4_0/ports/1/sm_lid"), "0xc001\n");
    fx.write(&fx.class("mlx4_0/ports/1/lid_mask_count"), "3\n");
    let ca = fx.devices().ca("mlx4_0").unwrap();
    let p1 = ca.port(1).unwrap();
    assert_eq!((p1.base_lid, p1.sm_lid, p1.lmc), (0xbeef, 0xc001, 3));
    assert_eq!(ca.port(2).unwrap().base_lid, 26);
    assert_eq!(ca.port(2).unwrap().sm_lid, 1);
}

#[test]
fn missing_link_layer_defaults_to_ib() {
    let fx = Fixture::new();
    fx.add_ca("ibsim0", "1: CA", CA_GUID);
    fx.add_port("ibsim0", 1, &PortSpec::active(CA_GUID + 1).no_link_layer());
    let d = fx.devices();
    let p = d.port("ibsim0", 1).unwrap();
    assert_eq!(p.link_layer, "IB");
    assert!(p.is_ib());
    assert_eq!(d.resolve(None, 1, false).unwrap(), ("ibsim0".to_owned(), 1));
    assert_eq!(d.resolve(None, 0, false).unwrap(), ("ibsim0".to_owned(), 1));
    // An empty (but present) link_layer file is not "IB", as in libibumad.
    fx.write(&fx.class("ibsim0/ports/1/link_layer"), "\n");
    assert_eq!(d.port("ibsim0", 1).unwrap().link_layer, "");
    assert_eq!(
        expect_no_device(d.resolve(None, 1, false)),
        "ibsim0: port 1 link layer is "
    );
}

#[test]
fn twelve_port_ca() {
    // libibumad cannot read a CA with 10 or more ports at all (-EIO); Rust reads it.
    let fx = Fixture::new();
    fx.add_ca("hfi1_0", "1: CA", CA_GUID);
    for n in 1..=12 {
        let spec = if n == 11 {
            PortSpec::active(CA_GUID + u64::from(n))
        } else {
            PortSpec::down(CA_GUID + u64::from(n))
        };
        fx.add_port("hfi1_0", n, &spec);
    }
    let d = fx.devices();
    let ca = d.ca("hfi1_0").unwrap();
    assert_eq!(ca.num_ports(), 12);
    assert_eq!(
        ca.ports.iter().map(|p| p.port_num).collect::<Vec<_>>(),
        (1..=12).collect::<Vec<_>>()
    );
    assert_eq!(ca.port(12).unwrap().port_guid, CA_GUID + 12);
    assert_eq!(ca.port(10).unwrap().port_guid, CA_GUID + 10);
    assert!(ca.port(11).unwrap().is_active());
    assert_eq!(
        d.resolve(None, 0, false).unwrap(),
        ("hfi1_0".to_owned(), 11)
    );
    assert_eq!(
        d.resolve(None, 12, false).unwrap(),
        ("hfi1_0".to_owned(), 12)
    );
}

#[test]
fn dotdot_name_refused_and_nothing_outside_read() {
    let fx = Fixture::new();
    fx.two_port_hca();
    // A complete, valid device one level above the class directory.
    let evil = fx.root.join("sys/class/evil");
    fx.add_ca_at(&evil, "1: CA", 0xbad);
    fx.add_port_at(&evil, 1, &PortSpec::active(0xbad1));
    fx.add_umad(7, "../evil", 1);
    // Proof that the tree is readable if someone joined the name blindly:
    let above = Devices::with_paths(Paths {
        class_dir: fx.root.join("sys/class"),
        ..Paths::with_root(&fx.root)
    });
    assert_eq!(above.ca("evil").unwrap().node_guid, 0xbad);

    let d = fx.devices();
    for name in ["../evil", "..", "mlx4_0/../../evil", "/sys/class/evil", ""] {
        let refused = |r: Result<()>| matches!(r, Err(Error::InvalidCaName { .. }));
        assert!(refused(d.ca(name).map(|_| ())), "ca({name:?})");
        assert!(refused(d.port(name, 1).map(|_| ())), "port({name:?})");
        assert!(
            refused(d.resolve(Some(name), 0, false).map(|_| ())),
            "resolve({name:?}, 0)"
        );
        assert!(
            refused(d.resolve(Some(name), 1, false).map(|_| ())),
            "resolve({name:?}, 1)"
        );
        assert!(refused(d.umad_id(name, 1).map(|_| ())), "umad_id({name:?})");
        assert!(refused(d.umad_device_path(name, 1).map(|_| ())));
        assert!(refused(d.issm_device_path(name, 1).map(|_| ())));
        assert!(refused(
            d.smi_gsi_pair_by_ca_name(Some(name), 0, false).map(|_| ())
        ));
    }
    let e = d.ca("../evil").unwrap_err();
    assert!(e.to_string().contains("../evil"), "{e}");
    assert_eq!(e.errno(), libc::EINVAL);
    // Enumeration never walks out either.
    assert_eq!(d.ca_names().unwrap(), ["mlx4_0"]);
}

#[test]
fn missing_abi_version() {
    let fx = Fixture::new();
    let d = fx.devices();
    match d.abi_version() {
        Err(e @ Error::AbiUnavailable { .. }) => {
            assert!(e.to_string().contains("modprobe ib_umad"), "{e}");
            assert_eq!(e.errno(), libc::ENOENT);
            let Error::AbiUnavailable { path, source } = e else {
                unreachable!()
            };
            assert_eq!(path, d.paths().mad_dir.join("abi_version"));
            assert_eq!(source.kind(), io::ErrorKind::NotFound);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn abi_version_too_old_and_current() {
    let fx = Fixture::new();
    let d = fx.devices();
    fx.abi("4\n");
    match d.abi_version() {
        Err(Error::AbiTooOld { found, path }) => {
            assert_eq!(found, 4);
            assert_eq!(path, d.paths().mad_dir.join("abi_version"));
        }
        other => panic!("unexpected {other:?}"),
    }
    fx.abi("5\n");
    assert_eq!(d.abi_version().unwrap(), 5);
    fx.abi("6");
    assert_eq!(d.abi_version().unwrap(), 6);
    fx.abi("garbage\n");
    assert!(matches!(
        d.abi_version(),
        Err(Error::AbiTooOld { found: 0, .. })
    ));
}

#[test]
fn default_selection_within_a_ca() {
    // ACTIVE beats LinkUp beats not-Disabled, regardless of port order.
    let fx = Fixture::new();
    fx.add_ca("mlx4_0", "1: CA", CA_GUID);
    fx.add_port("mlx4_0", 1, &PortSpec::disabled(CA_GUID + 1));
    fx.add_port("mlx4_0", 2, &PortSpec::down(CA_GUID + 2));
    fx.add_port("mlx4_0", 3, &PortSpec::link_up(CA_GUID + 3));
    fx.add_port("mlx4_0", 4, &PortSpec::active(CA_GUID + 4));
    let d = fx.devices();
    assert_eq!(d.resolve(Some("mlx4_0"), 0, false).unwrap().1, 4);
    fx.write(&fx.class("mlx4_0/ports/4/phys_state"), "3: Disabled\n");
    fx.write(&fx.class("mlx4_0/ports/4/state"), "1: DOWN\n");
    assert_eq!(d.resolve(Some("mlx4_0"), 0, false).unwrap().1, 3);
    fx.write(&fx.class("mlx4_0/ports/3/phys_state"), "3: Disabled\n");
    assert_eq!(d.resolve(Some("mlx4_0"), 0, false).unwrap().1, 2);
    fx.write(&fx.class("mlx4_0/ports/2/phys_state"), "3: Disabled\n");
    match d.resolve(Some("mlx4_0"), 0, false) {
        Err(Error::NoUsablePort { ca, reason }) => {
            assert_eq!(ca, "mlx4_0");
            assert!(
                reason.starts_with("no usable port: port 1 (InfiniBand) is Disabled"),
                "{reason}"
            );
            assert!(
                reason.contains("port 4 (InfiniBand) is Disabled"),
                "{reason}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn default_selection_across_cas() {
    let fx = Fixture::new();
    fx.add_ca("a_disabled", "1: CA", 0x100);
    fx.add_port("a_disabled", 1, &PortSpec::disabled(0x101));
    fx.add_ca("b_linkup", "1: CA", 0x200);
    fx.add_port("b_linkup", 1, &PortSpec::link_up(0x201));
    fx.add_ca("c_polling", "1: CA", 0x300);
    fx.add_port("c_polling", 1, &PortSpec::down(0x301));
    fx.add_ca("d_active", "1: CA", 0x400);
    fx.add_port("d_active", 1, &PortSpec::disabled(0x401));
    fx.add_port("d_active", 2, &PortSpec::active(0x402));
    fx.add_ca("e_rnic", "4: RNIC", 0x500);
    fx.add_port("e_rnic", 1, &PortSpec::active(0x501));
    let d = fx.devices();
    // An ACTIVE port anywhere wins, whatever the directory order.
    assert_eq!(
        d.resolve(None, 0, false).unwrap(),
        ("d_active".to_owned(), 2)
    );
    // Without it, the first usable CA in readdir order wins (LinkUp does not beat Polling
    // across CAs, exactly as in libibumad).
    fs::remove_dir_all(fx.class("d_active")).unwrap();
    let order = d.ca_names_unsorted().unwrap();
    let expected = order
        .iter()
        .find(|n| *n == "b_linkup" || *n == "c_polling")
        .unwrap()
        .clone();
    assert_eq!(d.resolve(None, 0, false).unwrap(), (expected, 1));
    // Only Disabled ports (the RNIC is not an InfiniBand node type): an error naming each CA.
    fs::remove_dir_all(fx.class("b_linkup")).unwrap();
    fs::remove_dir_all(fx.class("c_polling")).unwrap();
    let reason = expect_no_device(d.resolve(None, 0, false));
    assert_eq!(
        reason,
        "a_disabled: no usable port: port 1 (InfiniBand) is Disabled (phys_state 3)"
    );
    let err = d.resolve(None, 0, false).unwrap_err();
    assert_eq!(err.errno(), libc::ENODEV);
    assert!(
        err.to_string()
            .contains(&d.paths().class_dir.display().to_string()),
        "{err}"
    );
}

#[test]
fn unreadable_ca_is_skipped_by_default_selection() {
    let fx = Fixture::new();
    fx.two_port_hca();
    fx.add_ca("broken0", "1: CA", 0x900);
    fx.add_port("broken0", 1, &PortSpec::active(0x901));
    fx.remove(&fx.class("broken0/ports/1/rate"));
    let d = fx.devices();
    assert_eq!(d.resolve(None, 0, false).unwrap(), ("mlx4_0".to_owned(), 2));
    fs::remove_dir_all(fx.class("mlx4_0")).unwrap();
    let reason = expect_no_device(d.resolve(None, 0, false));
    assert!(reason.starts_with("broken0: cannot read "), "{reason}");
    assert!(reason.contains("broken0/ports/1/rate"), "{reason}");
}

#[test]
fn umad_id_beyond_191() {
    let fx = Fixture::new();
    fx.abi("5\n");
    fx.add_umad(0, "mlx4_0", 1);
    fx.add_umad(260, "mlx5_9", 1);
    fx.add_umad(250, "mlx5_9", 1);
    fx.add_umad(1000, "mlx5_9", 2);
    // Entries that are not canonical umad<N> names are ignored.
    fx.add_umad(3, "decoy", 9);
    let mad = fx.root.join("sys/class/infiniband_mad");
    fs::rename(mad.join("umad3"), mad.join("umad03")).unwrap();
    fx.write(&mad.join("umadx/ibdev"), "decoy\n");
    fx.write(&mad.join("umadx/port"), "9\n");
    let d = fx.devices();
    assert_eq!(d.umad_id("mlx5_9", 1).unwrap(), 250);
    assert_eq!(d.umad_id("mlx5_9", 2).unwrap(), 1000);
    assert_eq!(d.umad_id("mlx4_0", 1).unwrap(), 0);
    assert_eq!(
        d.umad_device_path("mlx5_9", 1).unwrap(),
        fx.root.join("dev/infiniband/umad250")
    );
    assert_eq!(
        d.issm_device_path("mlx5_9", 1).unwrap(),
        fx.root.join("dev/infiniband/issm250")
    );
    assert_eq!(
        d.issm_device_path("mlx5_9", 2).unwrap(),
        fx.root.join("dev/infiniband/issm1000")
    );
    for (ca, port) in [("decoy", 9), ("mlx5_9", 3), ("mlx5", 1), ("mlx4_0", 2)] {
        match d.umad_id(ca, port) {
            Err(Error::NoUmadDevice {
                ca: c,
                port: p,
                path,
            }) => {
                assert_eq!((c.as_str(), p), (ca, port));
                assert_eq!(path, mad);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // An entry with an unreadable port file is skipped, not an error.
    fx.remove(&mad.join("umad250/port"));
    assert_eq!(d.umad_id("mlx5_9", 1).unwrap(), 260);
}

#[test]
fn umad_id_without_ib_umad() {
    let fx = Fixture::new();
    fs::remove_dir_all(fx.root.join("sys/class/infiniband_mad")).unwrap();
    let d = fx.devices();
    match d.umad_device_path("mlx4_0", 1) {
        Err(e @ Error::NoUmadDevice { .. }) => {
            assert!(e.to_string().contains("is ib_umad loaded?"), "{e}");
            assert_eq!(e.errno(), libc::EINVAL);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn missing_files_are_named() {
    for file in [
        "lid_mask_count",
        "sm_lid",
        "sm_sl",
        "lid",
        "state",
        "phys_state",
        "rate",
        "cap_mask",
        "gids/0",
    ] {
        let fx = Fixture::new();
        fx.two_port_hca();
        let missing = fx.class(&format!("mlx4_0/ports/2/{file}"));
        fx.remove(&missing);
        let d = fx.devices();
        assert_eq!(expect_sysfs_path(d.ca("mlx4_0")), missing, "{file}");
        let err = d.port("mlx4_0", 2).unwrap_err();
        assert!(
            err.to_string().contains(&missing.display().to_string()),
            "{err}"
        );
        assert_eq!(err.errno(), libc::ENOENT);
        // The other port still reads.
        assert_eq!(d.port("mlx4_0", 1).unwrap().port_num, 1);
    }
    for file in ["node_guid", "sys_image_guid", "node_type"] {
        let fx = Fixture::new();
        fx.two_port_hca();
        let missing = fx.class(&format!("mlx4_0/{file}"));
        fx.remove(&missing);
        assert_eq!(
            expect_sysfs_path(fx.devices().ca("mlx4_0")),
            missing,
            "{file}"
        );
    }
    // Optional files.
    let fx = Fixture::new();
    fx.two_port_hca();
    for file in ["fw_ver", "hw_rev", "hca_type"] {
        fx.remove(&fx.class(&format!("mlx4_0/{file}")));
    }
    let ca = fx.devices().ca("mlx4_0").unwrap();
    assert_eq!(
        (ca.fw_ver.as_str(), ca.hw_ver.as_str(), ca.ca_type.as_str()),
        ("", "", "")
    );
    // The ports directory.
    fs::remove_dir_all(fx.class("mlx4_0/ports")).unwrap();
    assert_eq!(
        expect_sysfs_path(fx.devices().ca("mlx4_0")),
        fx.class("mlx4_0/ports")
    );
}

#[test]
fn missing_ca_and_port() {
    let fx = Fixture::new();
    fx.two_port_hca();
    let d = fx.devices();
    match d.ca("mlx9_9") {
        Err(e @ Error::NoSuchCa { .. }) => {
            assert_eq!(e.errno(), libc::ENOENT);
            let Error::NoSuchCa { ca, path } = e else {
                unreachable!()
            };
            assert_eq!(ca, "mlx9_9");
            assert_eq!(path, fx.class("mlx9_9"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(d.port("mlx9_9", 1), Err(Error::NoSuchCa { .. })));
    assert!(matches!(
        d.resolve(Some("mlx9_9"), 0, false),
        Err(Error::NoSuchCa { .. })
    ));
    match d.port("mlx4_0", 3) {
        Err(Error::NoUsablePort { ca, reason }) => {
            assert_eq!(ca, "mlx4_0");
            assert!(reason.starts_with("port 3 does not exist (no "), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        d.port("mlx4_0", 0),
        Err(Error::NoUsablePort { .. })
    ));
}

#[test]
fn empty_pkeys_dir() {
    let fx = Fixture::new();
    fx.add_ca("mlx4_0", "1: CA", CA_GUID);
    let mut spec = PortSpec::active(CA_GUID + 1);
    spec.pkeys.clear();
    fx.add_port("mlx4_0", 1, &spec);
    let pkeys = fx.class("mlx4_0/ports/1/pkeys");
    let d = fx.devices();
    let (path, msg) = expect_parse(d.port("mlx4_0", 1));
    assert_eq!(path, pkeys);
    assert!(msg.contains("no numbered entries"), "{msg}");
    // Only non-numeric names: the same.
    fx.write(&pkeys.join("README"), "x\n");
    assert_eq!(expect_parse(d.ca("mlx4_0")).0, pkeys);
    // The whole CA is unusable, as in libibumad.
    assert!(expect_no_device(d.resolve(None, 0, false)).contains("P_Key table"));
}

#[test]
fn non_contiguous_pkeys_dir() {
    let fx = Fixture::new();
    fx.add_ca("mlx4_0", "1: CA", CA_GUID);
    fx.add_port("mlx4_0", 1, &PortSpec::active(CA_GUID + 1));
    let pkeys = fx.class("mlx4_0/ports/1/pkeys");
    fx.write(&pkeys.join("5"), "0x8001\n");
    let d = fx.devices();
    let (path, msg) = expect_parse(d.port("mlx4_0", 1));
    assert_eq!(path, pkeys);
    assert!(msg.contains("entries 0 1 5"), "{msg}");
    // Filling the gap makes it contiguous; values come back in index order.
    for i in 2..5 {
        fx.write(
            &pkeys.join(i.to_string()),
            &format!("{:#06x}\n", 0x8000 + i),
        );
    }
    assert_eq!(
        d.port("mlx4_0", 1).unwrap().pkeys,
        [0xffff, 0x7fff, 0x8002, 0x8003, 0x8004, 0x8001]
    );
    // A leading zero is not a table index.
    fx.write(&pkeys.join("06"), "0x1\n");
    assert_eq!(expect_parse(d.port("mlx4_0", 1)).0, pkeys);
}

#[test]
fn hostile_pkey_and_port_names() {
    let fx = Fixture::new();
    fx.add_ca("mlx4_0", "1: CA", CA_GUID);
    fx.add_port("mlx4_0", 1, &PortSpec::active(CA_GUID + 1));
    let pkeys = fx.class("mlx4_0/ports/1/pkeys");
    fx.write(&pkeys.join("99999999999999999999"), "0xffff\n");
    let d = fx.devices();
    let (path, msg) = expect_parse(d.port("mlx4_0", 1));
    assert_eq!(path, pkeys);
    assert!(msg.contains("99999999999999999999"), "{msg}");
    fx.remove(&pkeys.join("99999999999999999999"));
    fx.write(&pkeys.join("4294967295"), "0xffff\n");
    assert_eq!(expect_parse(d.port("mlx4_0", 1)).0, pkeys);
    fx.remove(&pkeys.join("4294967295"));
    // Port directory names: a huge number, a name with letters, a leading zero.
    for bad in ["99999999999", "1abc", "01", "-1"] {
        let dir = fx.class(&format!("mlx4_0/ports/{bad}"));
        fs::create_dir_all(&dir).unwrap();
        let (path, msg) = expect_parse(d.ca("mlx4_0"));
        assert_eq!(path, dir, "{bad}");
        assert!(msg.contains("a port number"), "{msg}");
        fs::remove_dir_all(&dir).unwrap();
    }
    assert_eq!(d.ca("mlx4_0").unwrap().ports.len(), 1);
}

#[test]
fn garbage_in_files() {
    let fx = Fixture::new();
    fx.two_port_hca();
    let d = fx.devices();
    // A GUID with too few groups.
    let f = fx.class("mlx4_0/node_guid");
    fx.write(&f, "garbage\n");
    let (path, msg) = expect_parse(d.ca("mlx4_0"));
    assert_eq!(path, f);
    assert!(msg.contains("GUID") && msg.contains("\"garbage\""), "{msg}");
    fx.write(&f, "0002:c903:0001:2345\n");
    // A compressed GID is not the kernel's format.
    let f = fx.class("mlx4_0/ports/2/gids/0");
    fx.write(&f, "fe80::2\n");
    assert_eq!(expect_parse(d.ca("mlx4_0")).0, f);
    fx.write(&f, "fe80:0000:0000:0000:0002:c903:0001:2347\n");
    // A LID that does not fit 32 bits, and a P_Key that does not fit 16.
    let f = fx.class("mlx4_0/ports/2/lid");
    fx.write(&f, "0x100000000\n");
    assert_eq!(expect_parse(d.ca("mlx4_0")).0, f);
    fx.write(&f, "0x1a\n");
    let f = fx.class("mlx4_0/ports/2/pkeys/1");
    fx.write(&f, "0x10000\n");
    let (path, msg) = expect_parse(d.ca("mlx4_0"));
    assert_eq!(path, f);
    assert!(
        msg.contains("16-bit P_Key") && msg.contains("65536"),
        "{msg}"
    );
    fx.write(&f, "0x7fff\n");
    // Text without digits reads as 0, as strtoul does: a "bogus" state is not ACTIVE.
    fx.write(&fx.class("mlx4_0/ports/2/state"), "bogus\n");
    fx.write(&fx.class("mlx4_0/ports/2/rate"), "\n");
    let p = d.port("mlx4_0", 2).unwrap();
    assert_eq!((p.state, p.rate), (0, 0));
    assert_eq!(d.resolve(None, 0, false).unwrap(), ("mlx4_0".to_owned(), 2)); // still LinkUp
                                                                              // A node type without digits is 0: not InfiniBand, so not listed.
    fx.write(&fx.class("mlx4_0/node_type"), "CA\n");
    assert_eq!(d.ca("mlx4_0").unwrap().node_type, NodeType::Unknown(0));
    assert_eq!(d.ca_names().unwrap(), Vec::<String>::new());
    assert!(expect_no_device(d.resolve(None, 0, false))
        .contains("no device of an InfiniBand node type"));
}

#[test]
fn ca_names_sorted_and_filtered() {
    let fx = Fixture::new();
    for (name, t) in [
        ("mlx5_1", "1: CA"),
        ("ib_switch", "2: switch"),
        ("mlx5_0", "1: CA"),
        ("rtr0", "3: router"),
    ] {
        fx.add_ca(name, t, 0x1);
    }
    fx.add_ca("rxe_iw", "4: RNIC", 0x1);
    fx.add_ca("usnic_0", "5: usNIC", 0x1);
    fx.add_ca("usnic_1", "6: usNIC UDP", 0x1);
    fs::create_dir_all(fx.class("no_node_type")).unwrap();
    let long = "a_device_name_longer_than_twenty_bytes";
    fx.add_ca(long, "1: CA", 0x1);
    let d = fx.devices();
    let names = d.ca_names().unwrap();
    assert_eq!(names, [long, "ib_switch", "mlx5_0", "mlx5_1", "rtr0"]);
    let mut unsorted = d.ca_names_unsorted().unwrap();
    assert_eq!(unsorted.len(), 5);
    unsorted.sort();
    assert_eq!(unsorted, names);
    assert_eq!(d.ca("rxe_iw").unwrap().node_type, NodeType::Rnic);
    assert_eq!(d.ca("usnic_1").unwrap().node_type, NodeType::UsnicUdp);
}

#[test]
fn missing_class_dir() {
    let fx = Fixture::new();
    fs::remove_dir_all(fx.root.join("sys/class/infiniband")).unwrap();
    let d = fx.devices();
    assert_eq!(d.ca_names().unwrap(), Vec::<String>::new());
    assert_eq!(d.ca_names_unsorted().unwrap(), Vec::<String>::new());
    assert_eq!(d.smi_gsi_pairs().unwrap(), []);
    let reason = expect_no_device(d.resolve(None, 0, false));
    assert!(reason.contains("does not exist"), "{reason}");
    assert!(matches!(d.ca("mlx4_0"), Err(Error::NoSuchCa { .. })));
    // An explicit name and port are not checked.
    assert_eq!(
        d.resolve(Some("mlx4_0"), 1, false).unwrap(),
        ("mlx4_0".to_owned(), 1)
    );
}

#[test]
fn class_dir_that_is_a_file_is_an_error() {
    let fx = Fixture::new();
    let class = fx.root.join("sys/class/infiniband");
    fs::remove_dir_all(&class).unwrap();
    fx.write(&class, "not a directory\n");
    let d = fx.devices();
    assert_eq!(expect_sysfs_path(d.ca_names()), class);
    assert_eq!(expect_sysfs_path(d.resolve(None, 0, false)), class);
}

// ---------------------------------------------------------------------------------------------
// The sysfs readers on real files (their pure parsers are tested in `sysfs`).

#[test]
fn sysfs_readers_on_files() {
    use crate::device::sysfs::{list_dir, read_gid, read_guid, read_string, read_uint};
    let fx = Fixture::new();
    let file = |name: &str, content: &str| {
        let p = fx.root.join("files").join(name);
        fx.write(&p, content);
        p
    };
    assert_eq!(read_uint(&file("state", "4: ACTIVE\n")).unwrap(), 4);
    assert_eq!(read_uint(&file("lid", "0x1a")).unwrap(), 26);
    assert_eq!(
        read_string(&file("ll", "Ethernet\n"), 20).unwrap(),
        "Ethernet"
    );
    // Only max - 1 bytes count.
    assert_eq!(
        read_string(&file("long", "0123456789abcdef\n"), 8).unwrap(),
        "0123456"
    );
    assert_eq!(
        read_guid(&file("guid", "0002:c903:0001:2345\n")).unwrap(),
        CA_GUID
    );
    let gid = read_gid(&file("gid", "fe80:0000:0000:0000:0002:c903:0001:2346\n")).unwrap();
    assert_eq!(
        u128::from_be_bytes(gid),
        (u128::from(GID_PREFIX) << 64) | u128::from(CA_GUID + 1)
    );
    // Only 31 characters of a number file count, as in C: 33 spaces then a digit is 0.
    assert_eq!(
        read_uint(&file("padded", &format!("{}5\n", " ".repeat(33)))).unwrap(),
        0
    );
    let mut names = list_dir(&fx.root.join("files")).unwrap();
    names.sort();
    assert_eq!(
        names,
        ["gid", "guid", "lid", "ll", "long", "padded", "state"]
    );
}

#[test]
fn sysfs_reader_errors_name_the_file() {
    use crate::device::sysfs::{list_dir, read_gid, read_guid, read_uint};
    let fx = Fixture::new();
    let file = |name: &str, content: &str| {
        let p = fx.root.join("files").join(name);
        fx.write(&p, content);
        p
    };
    let missing = fx.root.join("files/missing");
    match read_uint(&missing) {
        Err(Error::Sysfs { path, source }) => {
            assert_eq!(path, missing);
            assert_eq!(source.kind(), io::ErrorKind::NotFound);
        }
        other => panic!("unexpected {other:?}"),
    }
    let big = file("big", "0x1ffffffff\n");
    let (path, msg) = expect_parse(read_uint(&big));
    assert_eq!(path, big);
    assert!(
        msg.contains(&big.display().to_string()) && msg.contains("0x1ffffffff"),
        "{msg}"
    );
    let bad = file("bad_guid", "garbage\n");
    assert!(
        matches!(read_guid(&bad), Err(Error::Parse { path, text, .. }) if path == bad && text == "garbage")
    );
    let bad = file("bad_gid", "fe80::1\n");
    assert!(matches!(read_gid(&bad), Err(Error::Parse { path, .. }) if path == bad));
    assert!(matches!(list_dir(&missing), Err(Error::Sysfs { path, .. }) if path == missing));
}

/// Records the steps of the default-port scan.
#[derive(Default)]
struct ScanLog(Vec<String>);

impl ScanObserver for ScanLog {
    fn checking_ca(&mut self, ca: &str) {
        self.0.push(format!("ca {ca}"));
    }
    fn checking_port(&mut self, port: u32) {
        self.0.push(format!("port {port}"));
    }
    fn found_active_port(&mut self, port: u32) {
        self.0.push(format!("active {port}"));
    }
    fn found_ca(&mut self, ca: &str, choice: PortChoice) {
        self.0.push(format!("found {ca} {choice:?}"));
    }
}

#[test]
fn the_scan_reports_every_step_libibumad_traces() {
    use PortChoice::{Active, Usable};
    let ib = "InfiniBand";
    let scan = |ca: &Ca, port: u32| {
        let mut log = ScanLog::default();
        let r = ca.choose_port_observed(port, false, &mut log).ok();
        (r, log.0)
    };
    // No port 2; port 3 LinkUp: pass 1 looks at every number 0..=3 and takes 3, no pass 2.
    let linkup = ca_of(
        NodeType::Ca,
        vec![port(1, 1, 2, ib, 0), port(3, 2, 5, ib, 0)],
    );
    assert_eq!(
        scan(&linkup, 0),
        (
            Some(Usable(3)),
            vec!["port 0", "port 1", "port 2", "port 3"]
                .into_iter()
                .map(String::from)
                .collect()
        )
    );
    // An ACTIVE port stops pass 1.
    let active = ca_of(
        NodeType::Ca,
        vec![port(1, 4, 5, ib, 0), port(2, 4, 5, ib, 0)],
    );
    assert_eq!(
        scan(&active, 0),
        (
            Some(Active(1)),
            vec!["port 0".to_owned(), "port 1".into(), "active 1".into()]
        )
    );
    // Nothing up: pass 2 runs over the numbers again, until a port that is not Disabled.
    let pass2 = ca_of(
        NodeType::Ca,
        vec![port(1, 1, 3, ib, 0), port(2, 1, 2, "Ethernet", 0)],
    );
    let (r, steps) = scan(&pass2, 0);
    assert_eq!(r, Some(Usable(2)));
    assert_eq!(steps.join(","), "port 0,port 1,port 2,port 0,port 1,port 2");
    // An explicit port and a switch take no steps.
    assert_eq!(scan(&active, 2), (Some(Active(2)), vec![]));
    let sw = ca_of(NodeType::Switch, vec![port(0, 4, 5, ib, 0)]);
    assert_eq!(scan(&sw, 0), (Some(Active(0)), vec![]));

    // Over CAs: each announced, unreadable ones skipped, the first ACTIVE one ends the scan.
    let names: Vec<String> = ["bad", "up", "act", "late"].map(String::from).to_vec();
    let mut log = ScanLog::default();
    let found = resolve_among(
        &names,
        |n| match n {
            "bad" => Err("unreadable"),
            "up" => Ok(Ca {
                name: "up".into(),
                ..linkup.clone()
            }),
            _ => Ok(Ca {
                name: n.into(),
                ..active.clone()
            }),
        },
        0,
        false,
        &mut log,
    );
    assert_eq!(found, Ok(("act".to_owned(), Active(1))));
    assert_eq!(
        log.0.join(","),
        "ca bad,ca up,port 0,port 1,port 2,port 3,found up Usable(3),ca act,port 0,port 1,active 1,found act Active(1)"
    );
    let none = resolve_among(
        &names[..1],
        |_| Err::<Ca, _>("unreadable"),
        0,
        false,
        &mut (),
    );
    assert_eq!(none, Err(vec!["bad: unreadable".to_owned()]));
}

#[test]
fn read_failure_reports_part_errno_and_missing_pkeys() {
    let fx = Fixture::new();
    fx.add_ca("mlx4_0", "1: CA", CA_GUID);
    let mut spec = PortSpec::active(CA_GUID + 1);
    spec.pkeys.clear();
    fx.add_port("mlx4_0", 1, &spec);
    let d = fx.devices();
    let failure = |r: Result<Ca>| d.read_failure("mlx4_0", &r.unwrap_err());
    // An empty P_Key directory: a port failure, no OS error, and the warning's data.
    let pkeys = fx.class("mlx4_0/ports/1/pkeys");
    let f = failure(d.ca("mlx4_0"));
    assert_eq!(
        (f.part, f.os_errno, f.errno),
        (FailedPart::Port, None, libc::EINVAL)
    );
    assert_eq!(
        f.no_pkeys,
        Some(NoPkeys {
            port: 1,
            dir: pkeys.clone()
        })
    );
    // A missing one: the same, with the OS error.
    fs::remove_dir(&pkeys).unwrap();
    let f = d.read_failure("mlx4_0", &d.port("mlx4_0", 1).unwrap_err());
    assert_eq!((f.part, f.os_errno), (FailedPart::Port, Some(libc::ENOENT)));
    assert_eq!(f.no_pkeys.map(|p| p.port), Some(1));
    // Another port file: no P_Key report.
    fx.remove(&fx.class("mlx4_0/ports/1/rate"));
    let f = failure(d.ca("mlx4_0"));
    assert_eq!(
        (f.part, f.os_errno, f.no_pkeys),
        (FailedPart::Port, Some(libc::ENOENT), None)
    );
    // The CA's own files, its ports directory, absent CAs and ports.
    fx.write(&fx.class("mlx4_0/node_guid"), "not a guid\n");
    let f = failure(d.ca("mlx4_0"));
    assert_eq!((f.part, f.os_errno), (FailedPart::CaFile, None));
    fx.add_ca("mlx4_1", "1: CA", CA_GUID + 16);
    fs::remove_dir_all(fx.class("mlx4_1/ports")).unwrap();
    let f = d.read_failure("mlx4_1", &d.ca("mlx4_1").unwrap_err());
    assert_eq!(
        (f.part, f.os_errno),
        (FailedPart::PortsDir, Some(libc::ENOENT))
    );
    let f = d.read_failure("mlx9_9", &d.ca("mlx9_9").unwrap_err());
    assert_eq!(
        (f.part, f.os_errno, f.errno),
        (FailedPart::NoSuchCa, None, libc::ENOENT)
    );
    let f = d.read_failure("..", &d.ca("..").unwrap_err());
    assert_eq!(f.part, FailedPart::NoSuchCa);
    let f = d.read_failure("mlx4_0", &d.port("mlx4_0", 7).unwrap_err());
    assert_eq!((f.part, f.errno), (FailedPart::NoSuchPort, libc::ENODEV));
    let other = Error::InvalidArgument("x".into());
    assert_eq!(d.read_failure("mlx4_0", &other).part, FailedPart::Other);
}
