//! The wire codes: every enum keeps every value (`u8::from(E::from(x)) == x`), and `Display`
//! never panics, for classes, methods, statuses, port and SM states, MTU, rate and the other
//! codes the Reprs carry.
#![no_main]
use ibmad::{
    attr, LinkSpeed, LinkWidth, Method, MgmtClass, Mtu, PhysPortState, PortState, Rate, RmppStatus,
    RmppType, SaStatus, Selector, SmState, Status,
};
use libfuzzer_sys::fuzz_target;

fn codes<E: Copy + From<u8> + Into<u8> + std::fmt::Display>(v: u8) {
    let e = E::from(v);
    assert_eq!(e.into(), v);
    let _ = e.to_string();
}

fuzz_target!(|data: [u8; 4]| {
    let [a, b, c, d] = data;
    let word = u16::from_be_bytes([a, b]);
    codes::<MgmtClass>(a);
    codes::<Method>(a);
    codes::<PortState>(a);
    codes::<PhysPortState>(a);
    codes::<LinkWidth>(a);
    codes::<Mtu>(a);
    codes::<Rate>(a);
    codes::<Selector>(a);
    codes::<SmState>(a);
    codes::<SaStatus>(a);
    codes::<RmppType>(a);
    codes::<RmppStatus>(a);
    codes::<attr::NodeType>(a);
    codes::<attr::NoticeType>(a);
    let _ = (
        Mtu::from(a).bytes(),
        Rate::from(a).gbps(),
        Rate::from_mbps(u32::from(word)),
    );
    let _ = Mtu::from_bytes(word);
    let t = attr::TrapNumber::from(word);
    assert_eq!(u16::from(t), word);
    let _ = t.to_string();
    let p = attr::ProducerType::from(u32::from(word));
    assert_eq!(u32::from(p), u32::from(word));
    let _ = p.to_string();
    let block = attr::VlArbBlock::from(word);
    assert_eq!(u16::from(block), word);
    let _ = (block.to_string(), attr::vl_arb_attr_mod(block, c));
    let s = Status(word);
    let _ = (
        s.to_string(),
        s.invalid_field(),
        s.class_specific(),
        s.is_success(),
    );
    assert_eq!(SaStatus::from_status(s).to_status().raw(), word & 0xff00);
    let _ = attr::SmControl::from(u32::from(word)).to_string();
    if let Some(speed) = LinkSpeed::from_codes(a, b, c) {
        let _ = (
            speed.to_string(),
            speed.lane_gbps(),
            speed.signalling_gbps(),
        );
        let _ = attr::rate_gbps(LinkWidth::from(d), speed);
    }
    let _ = (
        attr::sl2vl_attr_mod(c, d),
        attr::pkey_table_attr_mod(word, word),
        attr::mft_attr_mod(word, c),
    );
});
