//! What a command reaches beyond the project that its table entry cannot say: a test run
//! pointed at a deployed site (`BASE_URL=https://staging.example.com npx playwright test`,
//! `pytest --base-url https://…`), and media recorded from the person's screen, camera or
//! microphone (`ffmpeg -f x11grab -i :0.0 …`) or from a stream on the network (`ffmpeg -i
//! rtsp://192.168.1.40/stream1 …`).

use super::*;

/// Test runners, by the program's name and, for the tools that do more than test, the
/// subcommand that runs the tests.
pub(super) fn runs_tests(name: &str, arguments: &[Word]) -> bool {
    // `npx playwright test`, `pnpm exec jest`, `yarn dlx vitest`: the tool the runner runs.
    let skip = match (name, arguments.first().map(|word| word.text.as_str())) {
        ("npx" | "bunx" | "pnpx", _) => 0,
        ("pnpm" | "yarn" | "bun" | "npm", Some("exec" | "dlx" | "x")) => 1,
        _ => usize::MAX,
    };
    if skip != usize::MAX {
        let rest = &arguments[skip.min(arguments.len())..];
        let Some(at) = rest.iter().position(|word| !word.text.starts_with('-')) else {
            return false;
        };
        let tool = basename(&rest[at].text);
        return tool != name && runs_tests(tool, &rest[at + 1..]);
    }
    let first = arguments
        .iter()
        .find(|word| !word.text.starts_with('-'))
        .map_or("", |word| word.text.as_str());
    match name {
        "pytest" | "py.test" | "jest" | "vitest" | "mocha" | "ava" | "rspec" | "phpunit"
        | "pest" | "behave" | "robot" | "newman" | "testcafe" | "wdio" | "codeceptjs" | "karma"
        | "k6" => true,
        "playwright" | "go" | "cargo" | "dotnet" | "deno" | "bun" | "mix" | "npm" | "pnpm"
        | "yarn" | "mvn" | "mvnw" | "gradle" | "gradlew" => {
            matches!(first, "test" | "nextest" | "t" | "verify") || first.starts_with("test:")
        }
        "cypress" => first == "run",
        "python" | "python3" | "py" | "uv" | "poetry" => arguments
            .windows(2)
            .any(|pair| pair[0].text == "-m" && pair[1].text == "pytest"),
        _ => false,
    }
}

/// Whether a word holds a literal web address of another machine (`https://staging.…`,
/// `BASE_URL=https://…`, `--base-url=https://…`, `value="https://…"`).
fn names_remote_site(word: &Word) -> bool {
    let text = word.text.as_str();
    let lower = text.to_ascii_lowercase();
    ["http://", "https://", "ws://", "wss://"]
        .iter()
        .any(|scheme| {
            lower.match_indices(scheme).any(|(at, _)| {
                let url = &text[at..];
                let host = url_host(url);
                // (A host the shell computes is not the line's to tell.)
                !host.is_empty()
                    && !host.contains(['$', '…'])
                    && !is_local_url(url)
                    && !host.ends_with(".test")
                    && !host.ends_with(".local")
                    && host != "host.docker.internal"
            })
        })
}

/// A test run pointed at another machine's site or API by a variable assignment or an
/// argument: it exercises (and may change) what is deployed there.
pub(super) fn tests_remote_site(name: &str, arguments: &[Word], segment: &Segment) -> bool {
    runs_tests(name, arguments) && segment.words.iter().any(names_remote_site)
}

/// The capture devices of ffmpeg's `-f` (the screen, a camera, a microphone).
const CAPTURE_FORMATS: &[&str] = &[
    "x11grab",
    "xcbgrab",
    "kmsgrab",
    "fbdev",
    "gdigrab",
    "ddagrab",
    "dshow",
    "vfwcap",
    "avfoundation",
    "v4l2",
    "video4linux2",
    "pulse",
    "alsa",
    "jack",
    "oss",
    "sndio",
    "openal",
];

/// Stream protocols ffmpeg reads from the network.
const STREAM_SCHEMES: &[&str] = &[
    "rtsp://", "rtsps://", "rtmp://", "rtmps://", "srt://", "udp://", "tcp://", "rtp://", "mms://",
    "mmsh://",
];

/// What `ffmpeg` records beyond files: `Some(true)` for the person's screen, camera or
/// microphone (`-f x11grab`, `-f avfoundation`, `-i /dev/video0`), `Some(false)` for a
/// stream on the network (`-i rtsp://…`), `None` for files and web addresses alone.
pub(super) fn ffmpeg_records(name: &str, arguments: &[Word]) -> Option<bool> {
    if !matches!(name, "ffmpeg" | "ffmpeg.exe" | "ffprobe" | "ffplay") {
        return None;
    }
    // `-list_devices true`, `-sources`: the devices listed, nothing recorded.
    if arguments.iter().any(|word| {
        matches!(
            word.text.as_str(),
            "-list_devices" | "-sources" | "-devices"
        )
    }) {
        return None;
    }
    let mut stream = false;
    for pair in arguments.windows(2) {
        let value = pair[1].text.to_ascii_lowercase();
        match pair[0].text.as_str() {
            "-f" if CAPTURE_FORMATS.contains(&value.as_str()) => return Some(true),
            "-i" if value.starts_with("/dev/video") || value.starts_with("/dev/snd") => {
                return Some(true);
            }
            "-i" if STREAM_SCHEMES
                .iter()
                .any(|scheme| value.starts_with(scheme)) =>
            {
                stream |= !is_local_url(&value);
            }
            _ => {}
        }
    }
    stream.then_some(false)
}
