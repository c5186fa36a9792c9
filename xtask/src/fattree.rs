//! `cargo xtask gen-fattree`: a two-level fat-tree netfile for ibsim, written by ibnetsim's
//! generator (`ibnetsim::generate::FatTree`, the fabric `UMAD_SIM=fattree:L,S,H,R` builds in
//! process), so a netfile written here and the fabric generated there are the same.
//!
//! Layout: `LEAVES` leaf switches, each with `HOSTS_PER_LEAF` single-port HCAs on its ports
//! `1..=HOSTS_PER_LEAF` and one uplink to every spine on the following ports; `SPINES` spine
//! switches whose port `l` goes to leaf `l`. HCAs are written first, so `H-host0001` port 1 is
//! ibsim's default attach point. Every link is listed from both ends, with `lid 0 4xQDR`
//! comments so ibsim sets width/speed without warnings.

use ibnetsim::generate::{self, Spec};

/// Fat-tree dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatTree {
    /// Number of leaf switches.
    pub leaves: usize,
    /// Number of spine switches.
    pub spines: usize,
    /// HCAs per leaf switch.
    pub hosts_per_leaf: usize,
    /// Ports per switch.
    pub radix: usize,
}

/// What ibnetsim says is wrong, without the name it puts in front.
fn message(e: ibnetsim::Error) -> String {
    match e {
        ibnetsim::Error::Invalid { what, .. } => what,
        e => e.to_string(),
    }
}

impl FatTree {
    /// Default switch radix.
    pub const DEFAULT_RADIX: usize = generate::DEFAULT_RADIX;

    /// ibnetsim's tree of these dimensions (one link between each leaf and spine).
    fn spec(&self) -> generate::FatTree {
        generate::FatTree {
            radix: self.radix,
            ..generate::FatTree::new(self.leaves, self.spines, self.hosts_per_leaf)
        }
    }

    /// Checks the dimensions (ibnetsim's rules: at least 1 of each, RADIX in 2..=254,
    /// enough ports on leaves and spines, LIDs for all).
    pub fn validate(&self) -> Result<(), String> {
        self.spec().validate().map_err(message)
    }

    /// Number of HCAs.
    pub fn hosts(&self) -> usize {
        self.spec().size().hosts
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        self.spec().size().switches
    }

    /// Extra ibsim flags needed when the fabric exceeds ibsim's default capacities.
    pub fn ibsim_flags(&self) -> Vec<String> {
        self.spec().size().ibsim_flags()
    }

    /// Renders the netfile.
    pub fn netfile(&self) -> Result<String, String> {
        Spec::FatTree(self.spec()).netfile().map_err(message)
    }
}

/// Parses `LEAVES SPINES HOSTS_PER_LEAF [RADIX]`.
pub fn parse_args(args: &[String]) -> Result<FatTree, String> {
    let num = |i: usize, what: &str| -> Result<usize, String> {
        args[i]
            .parse()
            .map_err(|_| format!("{what} must be a number, got {:?}", args[i]))
    };
    if !(3..=4).contains(&args.len()) {
        return Err("usage: cargo xtask gen-fattree LEAVES SPINES HOSTS_PER_LEAF [RADIX]".into());
    }
    let t = FatTree {
        leaves: num(0, "LEAVES")?,
        spines: num(1, "SPINES")?,
        hosts_per_leaf: num(2, "HOSTS_PER_LEAF")?,
        radix: if args.len() == 4 {
            num(3, "RADIX")?
        } else {
            FatTree::DEFAULT_RADIX
        },
    };
    t.validate()?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibfabric::netfile::{Netfile, NetfileExt};
    use ibsim_harness::{fabrics_dir, find_tool, require_ibsim, run_with_timeout, Ibsim, TempDir};
    use std::time::Duration;

    fn small() -> FatTree {
        FatTree {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 2,
            radix: 4,
        }
    }

    #[test]
    fn links_are_symmetric_and_complete() {
        let t = FatTree {
            leaves: 3,
            spines: 2,
            hosts_per_leaf: 4,
            radix: 8,
        };
        let text = t.netfile().unwrap();
        // The netfile parser (ibnetfile's) applies ibsim's rules, link checks included.
        let net = Netfile::parse(&text).expect("a netfile ibsim accepts");
        assert!(net.warnings.is_empty(), "{:?}", net.warnings);
        assert_eq!(net.nodes.len(), t.hosts() + t.switches());
        let ports: Vec<_> = net.nodes.iter().flat_map(|n| &n.ports).collect();
        // Each host link and each leaf-spine link, seen from both ends, all 4x QDR.
        assert_eq!(ports.len(), 2 * (t.hosts() + t.leaves * t.spines));
        assert!(ports.iter().all(|p| (p.width, p.speed) == (3, 7)));
        let fabric = net.to_fabric();
        assert_eq!(fabric.links().len(), t.hosts() + t.leaves * t.spines);
        assert_eq!(net.nodes[0].id, "H-host0001", "the default attach point");
        assert_eq!(net.nodes[0].description, "host0001 HCA-1");
        assert!(net.node("H-host0012").is_some());
        assert_eq!(text.matches("4xQDR").count(), ports.len());
    }

    #[test]
    fn rejects_bad_dimensions() {
        let ok = small();
        assert!(ok.validate().is_ok());
        assert!(FatTree { radix: 3, ..ok }.validate().is_err());
        assert!(FatTree { leaves: 5, ..ok }.validate().is_err());
        assert!(FatTree { spines: 0, ..ok }.validate().is_err());
        assert!(FatTree { radix: 256, ..ok }.validate().is_err());
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_args(&args(&["2", "2", "2", "4"])), Ok(ok));
        assert_eq!(parse_args(&args(&["36", "8", "28"])).unwrap().radix, 36);
        assert!(parse_args(&args(&["2", "x", "2"])).is_err());
        assert!(parse_args(&args(&["2", "2"])).is_err());
    }

    #[test]
    fn capacity_flags() {
        assert!(small().ibsim_flags().is_empty());
        let big = FatTree {
            leaves: 48,
            spines: 16,
            hosts_per_leaf: 48,
            radix: 64,
        };
        assert_eq!(big.ibsim_flags(), vec!["-N 4096".to_owned()]);
    }

    #[test]
    fn committed_fattree_1008_is_up_to_date() {
        let t = FatTree {
            leaves: 36,
            spines: 8,
            hosts_per_leaf: 28,
            radix: 36,
        };
        let committed = std::fs::read_to_string(fabrics_dir().join("fattree-1008.net")).unwrap();
        assert!(
            committed == t.netfile().unwrap(),
            "fabrics/fattree-1008.net is stale: regenerate with \
             `cargo xtask gen-fattree 36 8 28 > fabrics/fattree-1008.net`"
        );
    }

    #[test]
    fn generated_2_2_2_4_runs_in_ibsim() {
        if !require_ibsim("xtask::fattree::generated_2_2_2_4_runs_in_ibsim") {
            return;
        }
        let dir = TempDir::new("umadrs-xtask-fattree").unwrap();
        let net = dir.join("fattree-2-2-2-4.net");
        std::fs::write(&net, small().netfile().unwrap()).unwrap();
        let started = Ibsim::start(&net);
        drop(dir);
        let sim = started.expect("ibsim accepts the generated fabric");
        let log = sim.log();
        assert!(!log.contains("ibwarn"), "warnings:\n{log}");
        sim.run_sm_once().expect("opensm -o");
        if let Some(tool) = find_tool("ibnetdiscover") {
            let out =
                run_with_timeout(&mut sim.umad2sim_command(tool), Duration::from_secs(60)).unwrap();
            let topo = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{topo}");
            assert_eq!(topo.lines().filter(|l| l.starts_with("Ca\t")).count(), 4);
            assert_eq!(
                topo.lines().filter(|l| l.starts_with("Switch\t")).count(),
                4
            );
        }
    }

    /// ibnetsim's other shapes, written as netfiles: ibsim loads each without a warning and
    /// opensm sweeps it.
    #[test]
    fn generated_shapes_run_in_ibsim() {
        if !require_ibsim("xtask::fattree::generated_shapes_run_in_ibsim") {
            return;
        }
        let dir = TempDir::new("umadrs-xtask-shapes").unwrap();
        for name in [
            "fattree:4,3,5,16,2",
            "fattree3:3,2,3,2,3,6",
            "ring:6,2",
            "mesh:4x3",
            "torus:4x4,2",
        ] {
            let spec: ibnetsim::generate::Spec = name.parse().unwrap();
            let net = dir.join(format!("{}.net", name.replace([':', ','], "-")));
            std::fs::write(&net, spec.netfile().unwrap()).unwrap();
            let sim = Ibsim::start(&net).unwrap_or_else(|e| panic!("{name}: {e}"));
            let log = sim.log();
            assert!(!log.contains("ibwarn"), "{name}: warnings:\n{log}");
            sim.run_sm_once()
                .unwrap_or_else(|e| panic!("{name}: opensm -o: {e}"));
            if let Some(tool) = find_tool("ibnetdiscover") {
                let out =
                    run_with_timeout(&mut sim.umad2sim_command(tool), Duration::from_secs(60))
                        .unwrap();
                let topo = String::from_utf8_lossy(&out.stdout);
                assert!(out.status.success(), "{name}: {topo}");
                let count = |kind: &str| topo.lines().filter(|l| l.starts_with(kind)).count();
                let size = spec.size();
                assert_eq!(count("Ca\t"), size.hosts, "{name}: {topo}");
                assert_eq!(count("Switch\t"), size.switches, "{name}: {topo}");
            }
        }
    }

    #[test]
    fn committed_fattree_1008_runs_in_ibsim() {
        if !require_ibsim("xtask::fattree::committed_fattree_1008_runs_in_ibsim") {
            return;
        }
        let sim = Ibsim::start(fabrics_dir().join("fattree-1008.net")).expect("start");
        let log = sim.log();
        assert!(!log.contains("ibwarn"), "warnings:\n{log}");
        sim.run_sm_once().expect("opensm -o on 1052 nodes");
    }
}
