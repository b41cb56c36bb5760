//! What the benchmark ran on, and when: nproc, CPU model, kernel, UTC date.

use std::time::{SystemTime, UNIX_EPOCH};

/// A short description of the machine, e.g. `2 × AMD EPYC, Linux 6.1.0`.
pub fn describe() -> String {
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| cpu_model(&info))
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| format!(", Linux {}", k.trim()))
        .unwrap_or_default();
    format!("nproc {nproc}, {cpu}{kernel}")
}

/// The 1-minute load average now, e.g. `load average 0.42`, or nothing when
/// /proc/loadavg cannot be read. A 2-core machine above ~1 is shared: expect
/// noisier, slower numbers.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let one_minute = text.split_whitespace().next()?;
    Some(format!("load average {one_minute} at start"))
}

/// The first `model name` in /proc/cpuinfo.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

/// Now, as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_timestamp(secs)
}

/// A Unix time as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_timestamp(unix_secs: u64) -> String {
    let days = unix_secs / 86_400;
    let in_day = unix_secs % 86_400;
    let (year, month, day) = civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        in_day / 3600,
        in_day % 3600 / 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01, counted in 400-year
/// eras (146 097 days each) of years starting on 1 March, so the leap day is
/// the last day of its year.
fn civil_date(days: u64) -> (u64, u64, u64) {
    // Days since 0000-03-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Month counted from March = 0.
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(utc_timestamp(0), "1970-01-01 00:00 UTC");
        // 2000-02-29 12:34 UTC: a leap day in a century leap year.
        assert_eq!(utc_timestamp(951_827_640), "2000-02-29 12:34 UTC");
        assert_eq!(utc_timestamp(951_868_800), "2000-03-01 00:00 UTC");
        // 2024-12-31 23:59 UTC.
        assert_eq!(utc_timestamp(1_735_689_540), "2024-12-31 23:59 UTC");
    }

    #[test]
    fn finds_the_cpu_model() {
        let info = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(cpu_model(info).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("processor : 0\n"), None);
    }
}
