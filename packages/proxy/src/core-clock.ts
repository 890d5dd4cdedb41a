// The clock the LB core (@meridian/lb-core) runs on: every `now` this package hands it (routing,
// the hold queue's waits and its expiry timer, scrape and peer-report freshness, index TTLs).
// Date.now() follows the system clock, which steps: an NTP correction after a VM resumes can move
// it an hour back (held requests would wait that hour more, their clients hanging) or forward (the
// whole queue would expire at once, every scrape and peer report look stale). This clock is the
// wall time at process start plus the monotonic time elapsed since, so no step moves it, and its
// values stay comparable, to within clock drift, with other processes' wall-clock-based times (peer
// reports cross processes). Date.now() remains right for timestamps meant as wall times (audit
// records, credential install times, the telemetry heartbeat, `startedAt`).
export const coreNow = (): number => performance.timeOrigin + performance.now();
