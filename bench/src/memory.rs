//! Where a child's resident pages are: file-backed (the binary's and the
//! shared libraries' pages it touched) or anonymous (heap, stacks, and the
//! copy-on-write pages the dynamic loader wrote: relocated `.data.rel.ro`,
//! the GOT), sampled from `/proc/PID/status` while it runs.
//!
//! Invariants: sampling reads the kernel's per-process counters (`RssFile`,
//! `RssAnon`, `RssShmem`, `VmHWM`), not `smaps_rollup`, which walks the page
//! tables under the child's mmap lock and would slow its page faults. The
//! counters are approximate (per-CPU batched, within a few pages), and a
//! sample can miss a short peak between two reads; the caller keeps
//! `ru_maxrss` as the exact peak and reports the split of the largest sample
//! next to it. The sampler only reads `/proc/PID` while the child is not
//! reaped (the runner joins it before `wait4`), so the pid cannot be reused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Time between two samples: short against a ~50 ms run, long enough that
/// the sampler (a read of a small proc file) takes little of the 2 cores.
const SAMPLE_EVERY: Duration = Duration::from_micros(250);

/// Resident memory of a process at one moment, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resident {
    pub file_kib: u64,
    pub anon_kib: u64,
    pub shmem_kib: u64,
    /// `VmHWM`: the peak RSS so far, as the kernel counts it.
    pub hwm_kib: u64,
}

impl Resident {
    pub fn total_kib(&self) -> u64 {
        self.file_kib + self.anon_kib + self.shmem_kib
    }

    /// Parses the lines of `/proc/PID/status` it needs; `None` for a process
    /// without memory (a zombie has no `Rss*` lines).
    pub fn parse(status: &str) -> Option<Resident> {
        let mut r = Resident::default();
        let mut seen = 0;
        for line in status.lines() {
            let Some((key, rest)) = line.split_once(':') else {
                continue;
            };
            let field = match key {
                "RssFile" => &mut r.file_kib,
                "RssAnon" => &mut r.anon_kib,
                "RssShmem" => &mut r.shmem_kib,
                "VmHWM" => &mut r.hwm_kib,
                _ => continue,
            };
            *field = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            seen += 1;
        }
        (seen == 4).then_some(r)
    }
}

/// A thread sampling one process until stopped; keeps the largest sample.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Option<Resident>>,
}

impl Sampler {
    pub fn start(pid: i32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let path = format!("/proc/{pid}/status");
        let thread = std::thread::spawn(move || {
            let mut largest: Option<Resident> = None;
            while !stopped.load(Ordering::Relaxed) {
                if let Some(now) = std::fs::read_to_string(&path)
                    .ok()
                    .as_deref()
                    .and_then(Resident::parse)
                    && largest.is_none_or(|l| now.total_kib() >= l.total_kib())
                {
                    largest = Some(now);
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
            largest
        });
        Sampler { stop, thread }
    }

    /// Stops sampling (call before the process is reaped); the largest
    /// sample, if any was taken.
    pub fn finish(self) -> Option<Resident> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_status_fields_and_refuses_a_zombie() {
        let status = "Name:\tgyre\nVmHWM:\t   15000 kB\nVmRSS:\t   14000 kB\n\
                      RssAnon:\t    3000 kB\nRssFile:\t   10900 kB\nRssShmem:\t     100 kB\n";
        let r = Resident::parse(status).expect("parses");
        assert_eq!((r.file_kib, r.anon_kib, r.shmem_kib), (10_900, 3_000, 100));
        assert_eq!((r.hwm_kib, r.total_kib()), (15_000, 14_000));
        assert_eq!(Resident::parse("Name:\tgyre\nState:\tZ (zombie)\n"), None);
    }

    #[test]
    fn samples_this_process() {
        let pid = i32::try_from(std::process::id()).expect("pid");
        let sampler = Sampler::start(pid);
        std::thread::sleep(Duration::from_millis(5));
        let r = sampler.finish().expect("sampled");
        assert!(r.file_kib > 0 && r.anon_kib > 0 && r.hwm_kib >= r.total_kib() / 2);
    }
}
