//! `mad::Gid`: parse never panics; emit(parse(x)) reproduces x; text and IPv6 conversions never panic and agree.
#![no_main]

mad_fuzz::repr_target!(mad::Gid, |gid, _data| {
    let addr = std::net::Ipv6Addr::from(*gid);
    assert_eq!(mad::Gid::from(addr), *gid);
    assert_eq!(gid.to_string(), addr.to_string());
    assert_eq!(mad::Gid::new(gid.prefix(), gid.guid()), *gid);
    let _ = gid.is_multicast();
});
