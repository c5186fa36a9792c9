//! Seeded faults and the net's clock.

use std::time::Duration;

use ibmad::{attr::id, DrPath, Method, Smp};

use crate::deliver::PERMISSIVE_LID;
use crate::{Dropped, Fabric, Net, NodeIdx};

fn fattree() -> Fabric {
    let mut f = Fabric::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fabrics/fattree-1008.net"
    ))
    .unwrap();
    f.configure(None).unwrap();
    f
}

/// The first CA port with a link.
fn first_ca(f: &Fabric) -> (NodeIdx, u8) {
    let i = f
        .nodes()
        .iter()
        .position(|n| !n.is_switch() && n.ports.iter().any(|p| p.remote.is_some()))
        .unwrap();
    (NodeIdx(i as u32), 1)
}

/// NodeInfo of every CA port's LID from `from`, by LID: which LIDs got no answer (each
/// asked `tries` times, a new TID each time, as a tool retries).
fn missed_by_lid(f: &mut Fabric, from: (NodeIdx, u8), tries: u32, tid0: u64) -> Vec<u16> {
    let lids: Vec<u16> = f
        .nodes()
        .iter()
        .filter(|n| !n.is_switch())
        .flat_map(|n| n.ports.iter().filter(|p| p.lid != 0).map(|p| p.lid))
        .collect();
    let mut missed = Vec::new();
    let mut tid = tid0;
    for lid in lids {
        let mut got = false;
        for _ in 0..tries {
            // A new TID each try (a tool's retries): the faults do not look at it.
            let req = Smp::lid_request(Method::Get, id::NODE_INFO, 0, tid);
            tid += 1;
            if f.deliver(from, lid, 0, &req).is_ok() {
                got = true;
                break;
            }
        }
        if !got {
            missed.push(lid);
        }
    }
    missed
}

#[test]
fn the_same_seed_loses_the_same_packets_whatever_the_tids() {
    let run = |seed: u64, tid0: u64| {
        let mut f = fattree();
        f.apply_faults(&format!("seed={seed},drop=20%")).unwrap();
        let from = first_ca(&f);
        missed_by_lid(&mut f, from, 3, tid0)
    };
    let a = run(7, 1);
    assert_eq!(
        a,
        run(7, 0x1234_5678_9abc),
        "the same seed, the same losses"
    );
    assert_ne!(a, run(8, 1), "another seed, other losses");
    // A request and its answer each lost at 20 % (64 % of tries get through), three tries:
    // about 4.7 % missed, more than none, fewer than all.
    assert!(!a.is_empty() && a.len() < 1008, "{} missed", a.len());
}

#[test]
fn retries_of_a_lost_packet_get_fresh_chances() {
    let mut f = fattree();
    f.apply_faults("seed=1,drop=50%").unwrap();
    let from = first_ca(&f);
    let req = Smp::dr_request(Method::Get, id::NODE_INFO, 0, 9, &DrPath::local());
    // Over no link nothing is lost.
    assert!(f.smp(from, &req).is_ok());
    let req = Smp::dr_request(
        Method::Get,
        id::NODE_INFO,
        0,
        9,
        &DrPath::from_hops(&[1, 1]).unwrap(),
    );
    let results: Vec<bool> = (0..64).map(|_| f.smp(from, &req).is_ok()).collect();
    assert!(results.iter().any(|&ok| ok) && results.iter().any(|&ok| !ok));
}

#[test]
fn a_dead_node_neither_answers_nor_forwards_and_comes_back() {
    let mut f = fattree();
    let from = first_ca(&f);
    let leaf = f.node(from.0).ports[1].remote.unwrap().0;
    let leaf_id = f.node(leaf).spec.id.clone();
    let req = Smp::dr_request(
        Method::Get,
        id::NODE_INFO,
        0,
        1,
        &DrPath::from_hops(&[1]).unwrap(),
    );
    assert!(f.smp(from, &req).is_ok());
    f.apply_faults(&format!("dead={leaf_id}")).unwrap();
    assert_eq!(f.smp(from, &req), Err(Dropped::Dead { node: leaf }));
    // Nor by LID through it.
    assert!(!missed_by_lid(&mut f, from, 1, 1).is_empty());
    f.apply_faults(&format!("alive={leaf_id}")).unwrap();
    assert!(f.smp(from, &req).is_ok());
    assert!(
        f.faults().is_none(),
        "no fault left, no seed: nothing to keep"
    );
}

#[test]
fn one_link_can_be_made_lossy() {
    let mut f = fattree();
    let from = first_ca(&f);
    let id = f.node(from.0).spec.id.clone();
    f.apply_faults(&format!("drop[{id}/1]=100%")).unwrap();
    let req = Smp::dr_request(
        Method::Get,
        id::NODE_INFO,
        0,
        1,
        &DrPath::from_hops(&[1]).unwrap(),
    );
    assert!(matches!(f.smp(from, &req), Err(Dropped::Lost { link }) if link.0 == from));
    // Another CA's link is not.
    let other = f
        .nodes()
        .iter()
        .rposition(|n| !n.is_switch())
        .map(|i| (NodeIdx(i as u32), 1))
        .unwrap();
    assert!(f.smp(other, &req).is_ok());
    f.apply_faults("clear").unwrap();
    assert!(f.smp(from, &req).is_ok());
}

#[test]
fn bad_specs_name_the_item_and_change_nothing() {
    let mut f = fattree();
    f.apply_faults("seed=3,drop=1%").unwrap();
    let before = f.faults().cloned();
    for bad in [
        "drop=120%",
        "drop=-1",
        "drop=x",
        "dead=nosuchnode",
        "drop[nosuchnode]=1%",
        "drop[S-000000000020002a/300]=1%",
        "delay=10%",
        "delay=10%@5",
        "delay=10%@5ms..1ms",
        "seed=0xzz",
        "bogus=1",
        "drop",
        "flip=1%,nonsense",
    ] {
        let err = f.apply_faults(bad).unwrap_err();
        assert!(bad.contains(&err.item), "{bad}: {err}");
        assert_eq!(f.faults().cloned(), before, "{bad} changed the faults");
    }
}

#[test]
fn the_nets_clock_moves_only_when_told_and_delays_and_duplicates_answers() {
    let mut f = fattree();
    f.apply_faults("seed=5,delay=100%@2ms..4ms,dup=100%")
        .unwrap();
    let from = first_ca(&f);
    let mut net: Net<u32> = Net::new(f);
    let req = Smp::dr_request(
        Method::Get,
        id::NODE_INFO,
        0,
        1,
        &DrPath::from_hops(&[1]).unwrap(),
    );
    net.send(7, from, PERMISSIVE_LID, 0, &req).unwrap();
    assert_eq!(net.in_flight(), 2);
    assert!(net.poll().is_none(), "nothing is due at time 0");
    let due = net.next_due().unwrap();
    assert!((Duration::from_millis(2)..=Duration::from_millis(4)).contains(&due));
    net.advance(due - Duration::from_nanos(1));
    assert!(net.poll().is_none());
    net.advance(Duration::from_nanos(1));
    let a = net.poll().unwrap();
    let b = net.poll().unwrap();
    assert_eq!((a.tag, a.at), (7, due));
    assert_eq!(a.reply, b.reply);
    assert!(net.poll().is_none() && net.next_due().is_none());
    // The clock never goes back.
    net.advance_to(Duration::ZERO);
    assert_eq!(net.now(), due);
}

#[test]
fn flipped_answers_differ_in_one_bit() {
    let req = Smp::dr_request(
        Method::Get,
        id::NODE_INFO,
        0,
        1,
        &DrPath::from_hops(&[1]).unwrap(),
    );
    let mut clean = fattree();
    let from = first_ca(&clean);
    let good = clean.deliver(from, PERMISSIVE_LID, 0, &req).unwrap();
    let mut f = fattree();
    f.apply_faults("seed=11,flip=100%").unwrap();
    let bad = f.deliver(from, PERMISSIVE_LID, 0, &req).unwrap();
    let bits: u32 = good
        .mad
        .iter()
        .zip(bad.mad.iter())
        .map(|(a, b)| (a ^ b).count_ones())
        .sum();
    assert_eq!(bits, 1);
}
