//! Scheduling class for Baton's background threads (checkpoint writer, WAL spare, partition
//! writeback): they yield the CPU and the disk to the request path.
//!
//! Owns only the calling thread's nice value and I/O priority. Must never be called on a
//! thread a request waits on (planner, WAL writer, runtime workers): a commit behind an idle-class
//! write would wait for the whole device queue. Background work still finishes: the CPU is
//! never fully busy for long, and mq-deadline ages idle-class requests so they are not starved.

/// Lowest CPU priority (nice 19) and the idle I/O class for the calling thread. Best effort: a
/// kernel that refuses either leaves the thread as it was.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        const IOPRIO_WHO_PROCESS: libc::c_long = 1;
        const IOPRIO_CLASS_IDLE: libc::c_long = 3;
        const IOPRIO_CLASS_SHIFT: u32 = 13;
        // SAFETY: plain integer syscalls on the calling thread (tid 0 = this thread).
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, 19);
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                0 as libc::c_long,
                IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT,
            );
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_calling_thread_gets_nice_19_and_the_idle_io_class_and_no_other_thread_does() {
        let probe = || unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            let nice = libc::getpriority(libc::PRIO_PROCESS, tid);
            let io = libc::syscall(libc::SYS_ioprio_get, 1 as libc::c_long, 0 as libc::c_long);
            (nice, io >> 13)
        };
        let before = probe();
        let lowered = std::thread::spawn(move || {
            super::lower_this_thread();
            probe()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (19, 3), "nice 19, IOPRIO_CLASS_IDLE");
        assert_eq!(probe(), before, "the caller's own thread is untouched");
    }
}
