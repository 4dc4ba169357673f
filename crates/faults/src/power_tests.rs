//! The power mirror in this very process (std's own file calls go through the
//! interposed symbols): what a restore keeps is exactly what was synced, plus
//! what the model allows of the rest.

use crate::power;
use baton_powercut::{restore, Report};
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::io::AsRawFd as _;
use std::path::Path;

fn sync_dir(p: &Path) {
    File::open(p).unwrap().sync_all().unwrap();
}

fn read(p: &Path) -> Option<Vec<u8>> {
    fs::read(p).ok()
}

#[test]
fn a_restore_keeps_what_was_synced_and_nothing_the_model_forbids() {
    let _serial = crate::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let base = tempdir();
    let (root, mirror) = (base.join("data"), base.join("mirror"));
    fs::create_dir_all(root.join("old")).unwrap();
    fs::write(root.join("old/kept"), b"there before").unwrap();
    power::enable(&root, &mirror).unwrap();

    // e: never fsynced itself; a syncfs makes it and every name durable (first: it
    // syncs everything written before it).
    fs::create_dir(root.join("late")).unwrap();
    let mut e = File::create(root.join("late/e")).unwrap();
    e.write_all(b"by syncfs").unwrap();
    // SAFETY: an open descriptor.
    assert_eq!(unsafe { libc::syncfs(e.as_raw_fd()) }, 0);

    // far: written and synced through a descriptor past the shim's table (a broker with
    // more open files than it has slots), named durably: it must survive like any other.
    let near = File::create(root.join("far")).unwrap();
    // SAFETY: dup2 onto a free number well past the table and below the fd limit.
    let fd = unsafe { libc::dup2(near.as_raw_fd(), 5000) };
    assert_eq!(fd, 5000, "{}", std::io::Error::last_os_error());
    drop(near);
    // SAFETY: fd is ours alone from here.
    let mut far = unsafe { <File as std::os::unix::io::FromRawFd>::from_raw_fd(fd) };
    far.write_all(b"past the table").unwrap();
    far.sync_data().unwrap();
    drop(far);
    sync_dir(&root);
    // a: synced, named durably, then more written and never synced.
    let mut a = File::create(root.join("a")).unwrap();
    a.write_all(&[b'A'; 700]).unwrap();
    a.sync_data().unwrap();
    sync_dir(&root);
    a.write_all(&[b'a'; 900]).unwrap();
    // b: synced data, but its directory never synced: its name may or may not survive.
    fs::create_dir(root.join("sub")).unwrap();
    sync_dir(&root);
    let mut b = File::create(root.join("sub/b")).unwrap();
    b.write_all(b"bee").unwrap();
    b.sync_data().unwrap();
    // c: durable under its name (renamed at the end, without a directory sync).
    let mut c = File::create(root.join("c")).unwrap();
    c.write_all(b"sea").unwrap();
    c.sync_all().unwrap();
    sync_dir(&root);
    // g: durable, then deleted durably.
    fs::write(root.join("g"), b"gone").unwrap();
    File::open(root.join("g")).unwrap().sync_all().unwrap();
    sync_dir(&root);
    fs::remove_file(root.join("g")).unwrap();
    sync_dir(&root);
    // f: synced long, then cut short and synced.
    let mut f = OpenOptions::new().create(true).write(true).truncate(true).open(root.join("f")).unwrap();
    f.write_all(&[b'F'; 2000]).unwrap();
    f.sync_data().unwrap();
    f.set_len(100).unwrap();
    f.sync_data().unwrap();
    sync_dir(&root);
    // c's rename: after the last sync of its directory.
    fs::rename(root.join("c"), root.join("d")).unwrap();
    // h: after everything, nothing synced at all.
    fs::write(root.join("h"), b"never").unwrap();
    drop((a, b, c, e, f));
    power::disable();

    let mut seen_b = [false; 2];
    let mut seen_d = [false; 2];
    let mut seen_h = [false; 2];
    let mut torn = Report::default();
    for seed in 0..40u64 {
        let tear = seed % 2 == 1;
        let out = base.join(format!("out{seed}"));
        let r = restore(&mirror, &root, &out, seed, tear).unwrap();
        if tear {
            torn.unsynced_kept += r.unsynced_kept;
            torn.unsynced_dropped += r.unsynced_dropped;
        }
        assert_eq!(read(&out.join("old/kept")).as_deref(), Some(&b"there before"[..]));
        assert_eq!(read(&out.join("far")).as_deref(), Some(&b"past the table"[..]), "seed {seed}");
        let got_a = read(&out.join("a")).expect("a was synced and its name too");
        assert_eq!(&got_a[..700], &[b'A'; 700][..]);
        if tear {
            assert!(got_a.len() <= 1600 && got_a[700..].iter().all(|&x| x == b'a' || x == 0), "seed {seed}");
        } else {
            assert_eq!(got_a.len(), 700, "seed {seed}: unsynced bytes kept without tearing");
        }
        match read(&out.join("sub/b")) {
            Some(x) => {
                assert_eq!(x, b"bee");
                seen_b[0] = true;
            }
            None => seen_b[1] = true,
        }
        // The rename came after the last sync: one of the two names, never neither.
        match (read(&out.join("c")), read(&out.join("d"))) {
            (Some(x), None) => {
                assert_eq!(x, b"sea");
                seen_d[1] = true;
            }
            (None, Some(x)) => {
                assert_eq!(x, b"sea");
                seen_d[0] = true;
            }
            other => panic!("seed {seed}: c and d: {other:?}"),
        }
        assert!(!out.join("g").exists(), "seed {seed}: a durable delete came undone");
        assert_eq!(read(&out.join("f")).map(|x| x.len()), Some(100), "seed {seed}");
        assert_eq!(read(&out.join("late/e")).as_deref(), Some(&b"by syncfs"[..]), "seed {seed}");
        match read(&out.join("h")) {
            // Its name may survive (the cut), its bytes only by tearing (or zeros: the size
            // got there, the data did not).
            Some(x) => {
                assert!(x.is_empty() || (tear && (x == b"never" || x == [0; 5])), "{x:?}");
                seen_h[0] = true;
            }
            None => seen_h[1] = true,
        }
    }
    // Each of the states the model allows was drawn at least once.
    assert_eq!((seen_b, seen_d, seen_h), ([true; 2], [true; 2], [true; 2]));
    assert!(torn.unsynced_kept > 0 && torn.unsynced_dropped > 0, "{torn:?}");
    // The dead directory is only read.
    assert_eq!(fs::read(root.join("a")).unwrap().len(), 1600);
    let _ = fs::remove_dir_all(&base);
}

/// A process started after a SIGKILL goes on with the dead one's mirror: what
/// that one wrote and never synced is not durable until this one syncs it (a
/// start-up that builds on those bytes and syncs nothing would lose them).
#[test]
fn a_process_after_a_crash_inherits_the_mirror_and_the_dead_ones_unsynced_bytes() {
    let _serial = crate::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let base = tempdir_named("inherit");
    let (root, mirror) = (base.join("data"), base.join("mirror"));
    power::enable(&root, &mirror).unwrap();
    let mut a = File::create(root.join("a")).unwrap();
    a.write_all(&[b'A'; 600]).unwrap();
    a.sync_data().unwrap();
    sync_dir(&root);
    a.write_all(&[b'a'; 400]).unwrap();
    // The dead process's last word: an ops line cut short by the kill.
    OpenOptions::new().append(true).open(mirror.join("ops")).unwrap().write_all(b"link\t9").unwrap();
    drop(a);
    power::disable();

    // The next process, under BATON_FAULTS_POWER_INHERIT, syncs nothing.
    power::inherit_mirror(&root, &mirror).unwrap();
    let mut n = File::create(root.join("n")).unwrap();
    n.write_all(b"new").unwrap();
    n.sync_data().unwrap();
    sync_dir(&root);
    power::disable();
    for seed in 0..8 {
        let out = base.join(format!("unsynced{seed}"));
        restore(&mirror, &root, &out, seed, false).unwrap();
        assert_eq!(read(&out.join("a")).unwrap(), vec![b'A'; 600], "seed {seed}: the dead one's tail is not durable");
        assert_eq!(read(&out.join("n")).as_deref(), Some(&b"new"[..]), "seed {seed}: the line cut short broke the log");
    }

    // Once this process syncs the file, all of it is durable, the dead one's tail too.
    power::inherit_mirror(&root, &mirror).unwrap();
    File::open(root.join("a")).unwrap().sync_data().unwrap();
    power::disable();
    let out = base.join("synced");
    restore(&mirror, &root, &out, 1, false).unwrap();
    let got = read(&out.join("a")).unwrap();
    assert_eq!((got.len(), &got[..600], &got[600..]), (1000, &[b'A'; 600][..], &[b'a'; 400][..]));
    let _ = fs::remove_dir_all(&base);
}

struct Entry(Vec<u8>, crossbeam_channel::Sender<Result<u64, baton_log::WalError>>);

impl baton_log::WalItem for Entry {
    fn encode(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.0);
    }
    fn complete(self: Box<Self>, result: Result<u64, baton_log::WalError>) {
        let _ = self.1.send(result);
    }
}

fn append(w: &baton_log::WalWriter, tag: &str, from: u64, to: u64) {
    let (tx, rx) = crossbeam_channel::unbounded();
    for i in from..=to {
        assert_eq!(w.submit(Box::new(Entry(format!("{tag}-{i}").into_bytes(), tx.clone()))), i);
        assert_eq!(rx.recv().unwrap().unwrap(), i);
    }
}

/// The WAL's suffix truncation (what Raft asks of a follower with a conflicting tail) is
/// durable when it returns: no power cut brings a removed entry back, before or after the
/// entries appended in its place (later segments deleted and the directory synced, the cut
/// segment's new size synced).
#[test]
fn a_truncated_log_tail_stays_gone_whatever_the_power_cut_keeps() {
    let _serial = crate::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 96-byte segments hold four of these entries: 1, 5, 9... start one. 9 empties a whole
    // segment (it is deleted); 11 cuts one in its middle (its new size must be synced).
    for cut in [9u64, 11] {
        truncate_and_cut(cut);
    }
}

fn truncate_and_cut(cut: u64) {
    let base = tempdir_named(&format!("wal-tail-{cut}"));
    let (root, mirror) = (base.join("data"), base.join("mirror"));
    power::enable(&root, &mirror).unwrap();
    let cfg = |dir: &Path| baton_log::WalConfig {
        dir: dir.join("wal"),
        segment_bytes: 96,
        preallocate: false,
        recycle: 0,
        truncate_damaged_tail: false,
    };
    let w = baton_log::WalWriter::start(cfg(&root), 1).unwrap();
    append(&w, "old", 1, 30);
    w.truncate_from(cut).unwrap();
    // The disk as a cut right now would find it (the writer is idle): the mirror and the
    // files, copied aside with the shim's tracking off.
    let (mirror_now, root_now) = (base.join("mirror-now"), base.join("data-now"));
    copy_tree(&mirror, &mirror_now);
    copy_tree(&root, &root_now);
    append(&w, "new", cut, cut + 2);
    w.shutdown();
    power::disable();
    let replay = |out: &Path, seed: u64| {
        let mut got = Vec::new();
        let info = baton_log::recover(&cfg(out), 1, |i, p| {
            got.push((i, String::from_utf8_lossy(p).into_owned()));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("cut {cut}, seed {seed}: recovery refused the cut log: {e}"));
        (info.next_index, got)
    };
    let old = |to: u64| (1..to).map(|i| (i, format!("old-{i}"))).collect::<Vec<_>>();
    for seed in 0..24u64 {
        let out = base.join(format!("now{seed}"));
        restore(&mirror_now, &root_now, &out, seed, seed % 2 == 1).unwrap();
        assert_eq!(replay(&out, seed), (cut, old(cut)), "cut {cut}, seed {seed}: a power cut just after truncate_from");
    }
    let mut want = old(cut);
    want.extend((cut..cut + 3).map(|i| (i, format!("new-{i}"))));
    for seed in 0..24u64 {
        let out = base.join(format!("out{seed}"));
        restore(&mirror, &root, &out, seed, seed % 2 == 1).unwrap();
        assert_eq!(replay(&out, seed), (cut + 3, want.clone()), "cut {cut}, seed {seed}");
    }
    let _ = fs::remove_dir_all(&base);
}

/// A copy of `from` at `to`, made with the shim's tracking off for this thread.
fn copy_tree(from: &Path, to: &Path) {
    let _quiet = power::Inside::enter();
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn tempdir() -> std::path::PathBuf {
    tempdir_named("restore")
}

fn tempdir_named(what: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("baton-power-test-{what}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}
