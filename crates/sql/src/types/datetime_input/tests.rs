use super::*;

fn date(text: &str) -> String {
    parse_date(text)
        .map(crate::types::format_date)
        .unwrap_or_else(|error| format!("{} {}", error.sqlstate, error.message))
}

fn timestamp(text: &str) -> String {
    parse_timestamp(text, false)
        .map(crate::types::format_timestamp)
        .unwrap_or_else(|error| format!("{} {}", error.sqlstate, error.message))
}

fn time(text: &str) -> String {
    parse_time(text)
        .map(crate::types::format_time)
        .unwrap_or_else(|error| format!("{} {}", error.sqlstate, error.message))
}

#[test]
fn dates_read_as_postgres_reads_them() {
    for text in [
        "20240229",
        "2024-02-29",
        "2024/02/29",
        "02/29/2024",
        "Feb 29 2024",
        "February 29, 2024",
        "29 Feb 2024",
        "2024-Feb-29",
        "Thu Feb 29 13:45:00 2024",
        "2024.060",
        "J2460370",
        "y2024m02d29",
        " 2024-02-29T13:45:00Z ",
    ] {
        assert_eq!(date(text), "2024-02-29", "{text}");
    }
    assert_eq!(date("12024-02-29"), "12024-02-29");
    assert_eq!(date("0044-03-15 BC"), "0044-03-15 BC");
    assert_eq!(date("0044-03-15BC"), "0044-03-15 BC");
    assert_eq!(date("02/29/24"), "2024-02-29");
    assert_eq!(date("01/02/70"), "1970-01-02");
    assert_eq!(date("epoch"), "1970-01-01");
    assert_eq!(date("infinity"), "infinity");
    assert_eq!(date("-infinity"), "-infinity");
}

#[test]
fn bad_dates_fail_with_postgres_codes() {
    assert_eq!(date("2023-02-29"), "22008 date/time field value out of range: \"2023-02-29\"");
    assert_eq!(date("44-03-15 BC"), "22008 date/time field value out of range: \"44-03-15 BC\"");
    assert_eq!(date("13:45"), "22007 invalid input syntax for type date: \"13:45\"");
    assert_eq!(date("garbage"), "22007 invalid input syntax for type date: \"garbage\"");
    assert_eq!(date("5874898-01-01"), "22008 date out of range: \"5874898-01-01\"");
    assert_eq!(date("4714-11-23 BC"), "22008 date out of range: \"4714-11-23 BC\"");
    assert_eq!(date("2024-02-29 mars/olympus"), "22023 time zone \"mars/olympus\" not recognized");
}

#[test]
fn timestamps_read_times_zones_and_fractions() {
    assert_eq!(timestamp("2024-02-29 1:45:00 pm"), "2024-02-29 13:45:00");
    assert_eq!(timestamp("2024-02-29 12:00 am"), "2024-02-29 00:00:00");
    assert_eq!(timestamp("2024-02-29 23:59:59.9999995"), "2024-03-01 00:00:00");
    assert_eq!(timestamp("2024-02-29 13:45:00.1234565"), "2024-02-29 13:45:00.123456");
    assert_eq!(timestamp("2024-02-29 13:45:00-08"), "2024-02-29 13:45:00");
    assert_eq!(timestamp("20240229T134500"), "2024-02-29 13:45:00");
    assert_eq!(timestamp("0044-03-15 BC 12:00"), "0044-03-15 12:00:00 BC");
    assert_eq!(timestamp("2024-02-29 24:00:00"), "2024-03-01 00:00:00");
    assert_eq!(
        timestamp("allballs"),
        "22007 invalid input syntax for type timestamp: \"allballs\""
    );
    assert_eq!(
        timestamp("2024-02-29 24:00:01"),
        "22008 date/time field value out of range: \"2024-02-29 24:00:01\""
    );
    assert_eq!(
        timestamp("2024-02-29 10:00+16"),
        "22009 time zone displacement out of range: \"2024-02-29 10:00+16\""
    );
    let with_zone = |text| parse_timestamp(text, true).map(crate::types::format_timestamp);
    assert_eq!(with_zone("2024-02-29 13:45:00+05:30").as_deref(), Ok("2024-02-29 08:15:00"));
    assert_eq!(with_zone("2024-02-29 13:45:00 PST").as_deref(), Ok("2024-02-29 21:45:00"));
    assert_eq!(
        with_zone("2024-07-01 12:00 America/New_York").as_deref(),
        Ok("2024-07-01 16:00:00")
    );
}

#[test]
fn times_read_as_postgres_reads_them() {
    assert_eq!(time("13:45"), "13:45:00");
    assert_eq!(time("1:45 PM"), "13:45:00");
    assert_eq!(time("134500"), "13:45:00");
    assert_eq!(time("allballs"), "00:00:00");
    assert_eq!(time("2024-02-29 13:45:00.5"), "13:45:00.5");
    assert_eq!(time("24:00:00"), "24:00:00");
    assert_eq!(time("13:45 PM"), "22008 date/time field value out of range: \"13:45 PM\"");
    assert_eq!(time("2024-02-29"), "22007 invalid input syntax for type time: \"2024-02-29\"");
}
