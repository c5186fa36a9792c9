//! `ibmad::Gid`: parse never panics; emit(parse(x)) reproduces x; text and IPv6 conversions never panic and agree.
#![no_main]

mad_fuzz::repr_target!(ibmad::Gid, |gid, _data| {
    let addr = std::net::Ipv6Addr::from(*gid);
    assert_eq!(ibmad::Gid::from(addr), *gid);
    assert_eq!(gid.to_string(), addr.to_string());
    assert_eq!(ibmad::Gid::new(gid.prefix(), gid.guid()), *gid);
    let _ = gid.is_multicast();
});
