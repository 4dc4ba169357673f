//! The simulator's Kafka side: one idempotent producer (the broker keeps the
//! next sequence it expects per partition and answers a lower one ok without
//! storing it again), and a committer that commits, fetches its committed
//! offset and fetches records. Must never touch the lease queue's state.

use super::{Bug, Out, Sim, KGROUP, KPID, TOPIC};
use std::fmt::Write as _;
use std::io::Write;

impl<W: Write> Sim<'_, W> {
    pub(super) fn kafka(&mut self, p: usize) {
        if !self.c.kafka || self.procs[p].free >= self.now {
            return;
        }
        let part = self.r.below(2) as usize;
        if p == self.procs.len() - 2 {
            return self.produce(p, part);
        }
        match self.r.below(3) {
            0 => {
                let len = self.k[part].len() as i64;
                let prev = self.kcommitted[part].1;
                let to = if self.chance(0.05) { (prev - 2).max(0) } else { (prev + self.r.below(4) as i64).min(len) };
                let args = format!(r#","group":"{KGROUP}","topic":"{TOPIC}","partition":{part},"offset":{to}"#);
                self.op(p, "kafka_commit", args, |s, happens| {
                    if happens {
                        let c = &mut s.kcommitted[part];
                        *c = (c.1, to);
                    }
                    (false, String::new())
                });
            }
            1 => {
                let args = format!(r#","group":"{KGROUP}","topic":"{TOPIC}","partition":{part}"#);
                self.op(p, "kafka_offset_fetch", args, |s, _| {
                    let (before, now) = s.kcommitted[part];
                    let v = if before != now && s.bug(Bug::CommitBackwards, 0.3) { before } else { now };
                    (false, format!(r#","offset":{v}"#))
                });
            }
            _ => {
                let from = self.r.below(self.k[part].len() as u64 + 1);
                let args = format!(r#","topic":"{TOPIC}","partition":{part},"offset":{from}"#);
                self.op(p, "kafka_fetch", args, |s, _| {
                    let mut r = r#","records":["#.to_owned();
                    for (i, o) in (from..(from + 5).min(s.k[part].len() as u64)).enumerate() {
                        let _ = write!(
                            r,
                            r#"{}{{"offset":{o},"payload":"{}"}}"#,
                            if i > 0 { "," } else { "" },
                            s.k[part][o as usize]
                        );
                    }
                    r.push(']');
                    (false, r)
                });
            }
        }
    }

    fn produce(&mut self, p: usize, part: usize) {
        let (part, seq, recs) = match self.procs[p].kretry.take() {
            Some(r) => r,
            None => {
                let n = 1 + self.r.below(3);
                let recs: Vec<String> = (0..n).map(|i| format!("k-{}", self.kn + i)).collect();
                self.kn += n;
                let seq = self.kclient[part];
                self.kclient[part] += n as i32;
                (part, seq, recs)
            }
        };
        let mut args = format!(
            r#","topic":"{TOPIC}","partition":{part},"producer":{{"id":{KPID},"epoch":0,"seq":{seq}}},"records":["#
        );
        for (i, r) in recs.iter().enumerate() {
            let _ = write!(args, r#"{}{{"payload":"{r}"}}"#, if i > 0 { "," } else { "" });
        }
        args.push(']');
        let n = recs.len() as i32;
        let again = recs.clone();
        let out = self.op(p, "kafka_produce", args, |s, happens| {
            let base = s.k[part].len();
            // The broker keeps the next sequence it expects; a lower one is a retry
            // of a batch it already has: answered ok, not stored again.
            let dup = seq < s.kseq[part];
            if !happens || (dup && !s.bug(Bug::KafkaDuplicate, 1.0)) {
                return (false, String::new());
            }
            s.k[part].extend(recs.iter().cloned());
            s.kseq[part] = s.kseq[part].max(seq + n);
            (false, format!(r#","base_offset":{base}"#))
        });
        if out == Out::Unknown {
            // An idempotent producer retries with the same sequence.
            self.procs[p].kretry = Some((part, seq, again));
        }
    }
}
