//! `mad::perf::data`/`data_mut`: never panic; the data area is everything from byte 64 on.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut copy = data.to_vec();
    match mad::perf::data(data) {
        Ok(d) => {
            assert_eq!(d, &data[mad::perf::PERF_DATA_OFFSET..]);
            assert_eq!(mad::perf::data_mut(&mut copy).unwrap(), d);
        }
        Err(_) => {
            assert!(data.len() <= mad::perf::PERF_DATA_OFFSET);
            assert!(mad::perf::data_mut(&mut copy).is_err());
        }
    }
});
