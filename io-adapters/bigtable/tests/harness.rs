#![allow(clippy::unwrap_used)]
//! The emulator harness leaks no process: not after `Drop`, and not when the process that
//! started it exits without running destructors (as a test binary does with statics).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use rowkit_testkit::emulator::Emulator;

/// Whether something still listens on `host`, polled for up to ~10 s until it stops.
fn still_listening(host: &str) -> bool {
    for _ in 0..100 {
        if TcpStream::connect(host).is_err() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// Run only as the child of [`emulator_stops_when_its_process_exits`]: starts the shared
/// emulator, prints its address and exits without destructors.
#[test]
#[ignore = "helper process for emulator_stops_when_its_process_exits"]
fn harness_child() {
    if std::env::var_os("ROWKIT_HARNESS_CHILD").is_none() {
        return;
    }
    let emu = Emulator::shared_or_skip("harness_child").unwrap();
    println!("EMULATOR {}", emu.host());
    std::process::exit(0);
}

#[test]
fn emulator_stops_when_its_process_exits() {
    if Emulator::shared_or_skip("emulator_stops_when_its_process_exits").is_none() {
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "harness_child",
            "--include-ignored",
            "--nocapture",
        ])
        .env("ROWKIT_HARNESS_CHILD", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let host = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("EMULATOR ").map(str::to_string))
        .expect("the child reports its emulator");
    assert!(child.wait().unwrap().success());
    assert!(
        !still_listening(&host),
        "the emulator at {host} outlived its process"
    );
}

#[test]
fn dropping_an_emulator_stops_it() {
    if Emulator::shared_or_skip("dropping_an_emulator_stops_it").is_none() {
        return;
    }
    let emu = Emulator::start().unwrap();
    let host = emu.host().to_string();
    assert!(TcpStream::connect(&host).is_ok(), "running");
    drop(emu);
    // Drop waits for the wrapper, which waits for the emulator: nothing listens any more.
    assert!(TcpStream::connect(&host).is_err(), "stopped by Drop");
}
