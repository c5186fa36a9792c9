//! `ibmad::perf::data`/`data_mut`: never panic; the data area is everything from byte 64 on.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut copy = data.to_vec();
    match ibmad::perf::data(data) {
        Ok(d) => {
            assert_eq!(d, &data[ibmad::perf::PERF_DATA_OFFSET..]);
            assert_eq!(ibmad::perf::data_mut(&mut copy).unwrap(), d);
        }
        Err(_) => {
            assert!(data.len() <= ibmad::perf::PERF_DATA_OFFSET);
            assert!(ibmad::perf::data_mut(&mut copy).is_err());
        }
    }
});
