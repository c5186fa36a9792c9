//! SA MADs: checked view, every getter, `SaHeader`'s parse/emit round trip, and the records
//! of a GetTableResp (`records()`, `parse_records::<R>()` for every record type) never panic;
//! each record that parses emits back its bytes.
#![no_main]
use ibmad::sa::{self, SaRecord};
use ibmad::{SaHeader, SaMad};
use libfuzzer_sys::fuzz_target;

/// Every record of `sa` parsed as `R`: the count matches `records()`, and a record that
/// parses emits back the bytes it came from.
fn check_records<R: SaRecord + PartialEq + core::fmt::Debug>(sa: &SaMad<&[u8]>) {
    let raw: Vec<&[u8]> = sa.records().collect();
    let parsed = sa.parse_records::<R>();
    assert_eq!(parsed.len(), raw.len());
    for (record, bytes) in parsed.zip(&raw) {
        match record {
            Ok(r) => {
                assert!(bytes.len() >= R::LEN);
                let mut out = vec![0u8; R::LEN];
                r.emit(&mut out);
                assert_eq!(&out[..], &bytes[..R::LEN]);
            }
            Err(e) => assert_eq!(
                e,
                ibmad::Error::Truncated {
                    needed: R::LEN,
                    got: bytes.len()
                }
            ),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(sa) = SaMad::new_checked(data) else {
        return;
    };
    let _ = (
        sa.mgmt_class(),
        sa.method(),
        sa.status(),
        sa.sa_status().to_string(),
        sa.tid(),
        sa.attr_id(),
        sa.attr_mod(),
        sa.rmpp().flags(),
        sa.sm_key(),
        sa.attr_offset(),
        sa.reserved(),
        sa.comp_mask(),
        sa.data(),
    );
    let records = sa.records();
    let n = records.len();
    assert_eq!(records.count(), n);
    assert!(n * usize::from(sa.attr_offset()) * 8 <= sa.data().len());
    check_records::<sa::GuidInfoRecord>(&sa);
    check_records::<sa::InformInfo>(&sa);
    check_records::<sa::InformInfoRecord>(&sa);
    check_records::<sa::LftRecord>(&sa);
    check_records::<sa::LinkRecord>(&sa);
    check_records::<sa::McMemberRecord>(&sa);
    check_records::<sa::NodeRecord>(&sa);
    check_records::<sa::PathRecord>(&sa);
    check_records::<sa::PKeyTableRecord>(&sa);
    check_records::<sa::PortInfoRecord>(&sa);
    check_records::<sa::ServiceRecord>(&sa);
    check_records::<sa::SmInfoRecord>(&sa);
    check_records::<sa::SwitchInfoRecord>(&sa);
    mad_fuzz::round_trip(
        data,
        |d| SaHeader::parse(&SaMad::new_unchecked(d)),
        SaHeader::buffer_len,
        |h, out| h.emit(&mut SaMad::new_unchecked(out)),
    );
});
