//! Multicast checks the tests share: two CAs join a group through the SA, then C's and our
//! `ibtracert -m` between them, `ibroute -M` and `dump_fts -M` must agree.

use ibmad::Gid;
use ibsim_harness::Ibsim;

use super::{c_run, join, our_run};

/// (LID, description) of each CA's first port in C `ibnetdiscover` output.
pub fn ca_descriptions(text: &str) -> Vec<(String, String)> {
    let mut desc = None;
    let mut out = Vec::new();
    for l in text.lines() {
        if l.starts_with("Ca") {
            desc = l.split('"').nth(3).map(str::to_string);
        } else if l.starts_with('[') {
            if let (Some(d), Some(lid)) = (
                desc.take(),
                l.split("# lid ")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next()),
            ) {
                out.push((lid.to_string(), d));
            }
        }
    }
    out
}

/// With members joined: C's multicast trace between two of them, and ours.
pub fn compare_multicast(sim: &Ibsim, fabric: &str, topology: &str, sw: &str) {
    let (_, groups) = c_run(sim, "saquery", &["-g"]);
    let mgid = groups
        .lines()
        .find_map(|l| l.trim().strip_prefix("MGID"))
        .map(|v| v.trim_start_matches('.'))
        .expect("a multicast group");
    let mgid: Gid = mgid.parse::<std::net::Ipv6Addr>().unwrap().into();
    let mlid = groups
        .lines()
        .find_map(|l| l.trim().strip_prefix("Mlid"))
        .map(|v| v.trim_start_matches('.').to_string())
        .unwrap();
    let cas = ca_descriptions(topology);
    let (a, b) = (&cas[0], &cas[cas.len() - 1]);
    join(sim, &a.1, mgid);
    join(sim, &b.1, mgid);
    // opensm programs the switches' MFTs after the joins.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (_, t) = c_run(sim, "dump_fts", &["-M"]);
        if !t.contains(" 0 valid mlids") || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    for args in [
        vec!["-m", mlid.as_str(), &a.0, &b.0],
        vec!["-m", mlid.as_str(), "-n", &b.0, &a.0],
    ] {
        let (c_code, c_out) = c_run(sim, "ibtracert", &args);
        let (our_code, our_out) = our_run(sim, "ibtracert", &args);
        assert!(
            c_code == 0 && c_out.starts_with("From ca "),
            "{fabric} {args:?}\n{c_out}"
        );
        assert_eq!(our_code, c_code, "{fabric} {args:?}: exit codes\n{c_out}");
        assert_eq!(our_out, c_out, "{fabric} {args:?}: stdout differs");
    }
    for tool in ["ibroute", "dump_fts"] {
        let args: Vec<&str> = if tool == "ibroute" {
            vec!["-M", sw]
        } else {
            vec!["-M"]
        };
        let (c_code, c_out) = c_run(sim, tool, &args);
        let (our_code, our_out) = our_run(sim, tool, &args);
        assert_eq!(
            (our_code, &our_out),
            (c_code, &c_out),
            "{fabric} {tool} {args:?}"
        );
    }
}
