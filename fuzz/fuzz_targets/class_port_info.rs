//! `ibmad::ClassPortInfo`: parse never panics; emit(parse(x)) reproduces x; the capability, redirection and timeout helpers never panic.
#![no_main]

mad_fuzz::repr_target!(ibmad::ClassPortInfo, |cpi, data| {
    let _ = cpi.has_capability(mad_fuzz::be16(data, ibmad::ClassPortInfo::LEN));
    let _ = (cpi.is_redirected(), cpi.resp_time_us());
});
