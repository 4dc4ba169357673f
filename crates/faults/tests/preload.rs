//! The built `libbaton_faults.so` through `LD_PRELOAD`, as a spawned broker loads it:
//! this test binary runs itself again as the preloaded child. Being an
//! integration test of the crate, it also makes `cargo test` build the cdylib
//! (target/release/libbaton_faults.so) that tests/check/check_history_faults.rs loads.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The newest build: `cargo build` leaves it in target/<profile>/, `cargo test` in its deps/.
fn shim() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let found = [deps.join("libbaton_faults.so"), deps.parent().unwrap().join("libbaton_faults.so")]
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max();
    found.unwrap_or_else(|| panic!("no libbaton_faults.so in {}: cargo build -p baton-faults", deps.display())).1
}

/// What the child does when preloaded: one fsync and one clock read, printed.
#[test]
fn child() {
    let Some(dir) = std::env::var_os("BATON_FAULTS_TEST_CHILD") else { return };
    let f = std::fs::File::create(PathBuf::from(dir).join("data")).unwrap();
    let sync = match f.sync_data() {
        Ok(()) => "ok".to_string(),
        Err(e) => format!("errno:{}", e.raw_os_error().unwrap_or(0)),
    };
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    println!("RESULT sync={sync} wall={wall}");
}

fn run_child(dir: &std::path::Path, ctl: Option<&std::path::Path>) -> (String, u64) {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "child", "--nocapture", "--test-threads", "1"])
        .env("LD_PRELOAD", shim())
        .env("BATON_FAULTS_TEST_CHILD", dir)
        .env_remove("BATON_FAULTS_CTL");
    if let Some(p) = ctl {
        c.env("BATON_FAULTS_CTL", p);
    }
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let line =
        text.lines().find_map(|l| Some(&l[l.find("RESULT ")? + 7..])).unwrap_or_else(|| panic!("no result: {text}"));
    let sync = line.split_whitespace().find_map(|w| w.strip_prefix("sync=")).unwrap().to_string();
    let wall = line.split_whitespace().find_map(|w| w.strip_prefix("wall=")).unwrap().parse().unwrap();
    (sync, wall)
}

#[test]
fn a_preloaded_process_gets_the_faults_of_its_control_file_and_none_without_one() {
    let dir = std::env::temp_dir().join(format!("baton-faults-preload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ctl = dir.join("ctl");
    std::fs::write(&ctl, "gen 1\nfsync fail\nclock 7200000\n").unwrap();
    let now = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();

    let (sync, wall) = run_child(&dir, Some(&ctl));
    assert_eq!(sync, format!("errno:{}", libc::EIO));
    assert!(wall.abs_diff(now() + 7200) < 5, "the wall clock read {wall}, now is {}", now());
    // The child reported what it applied.
    let seen = std::fs::read_to_string(dir.join("ctl.seen")).unwrap_or_default();
    assert!(seen.starts_with("gen 1\n"), "{seen}");

    // Preloaded but with no control file named: nothing changes.
    let (sync, wall) = run_child(&dir, None);
    assert_eq!(sync, "ok");
    assert!(wall.abs_diff(now()) < 5);

    // A cleared file: nothing changes either.
    std::fs::write(&ctl, "gen 2\nclear\n").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let (sync, wall) = run_child(&dir, Some(&ctl));
    assert_eq!(sync, "ok");
    assert!(wall.abs_diff(now()) < 5);
    let _ = std::fs::remove_dir_all(&dir);
}
