//! Commands that reach another machine (over ssh), a container, a pod or an Android device:
//! `ssh host 'command'` runs a command line there, and `scp`/`rsync` copy from there. What
//! runs or is copied is judged as it is written: a remote command that only reads (`tail
//! -5 /srv/log`, `nvidia-smi`, `ps aux`) is a read, as it would be here, and a copy from
//! another host into the project is a download. Anything else stays `network` (asked), and
//! credential material named over there is credential material.
//!
//! The remote machine's folders are unknown: its command is judged with no working
//! directory and no home, so a relative path or `~` is never placed in this project.

use super::*;
use crate::matcher::path::Extent;
use crate::matcher::Side;

/// bash's network redirections, `/dev/tcp/HOST/PORT` and `/dev/udp/HOST/PORT`: `Some(true)`
/// to this machine, `Some(false)` to another or one computed at run time, `None` for any
/// other target (a file).
pub(super) fn network_redirection(target: &Word) -> Option<bool> {
    let rest = target
        .text
        .strip_prefix("/dev/tcp/")
        .or_else(|| target.text.strip_prefix("/dev/udp/"))?;
    let host = rest.split('/').next().unwrap_or_default();
    // (An IPv6 address is read as a URL writes it, in brackets.)
    let host = match host.contains(':') {
        true => format!("[{host}]"),
        false => host.to_owned(),
    };
    Some(!target.dynamic && is_local_url(&host))
}

/// Where a container's command starts in the arguments of `PROGRAM ARGUMENTS`, and whether
/// every option before it is one this knows.
pub(super) struct ContainerCommand {
    pub(super) start: usize,
    pub(super) known: bool,
}

/// Options of `exec`, `compose exec` and `compose run` that take no value.
const CONTAINER_FLAGS: &[&str] = &[
    "-i",
    "-t",
    "-it",
    "-ti",
    "-d",
    "-T",
    "--interactive",
    "--tty",
    "--detach",
    "--no-TTY",
    "--rm",
    "--no-deps",
    "--service-ports",
    "--use-aliases",
    "--build",
    "--remove-orphans",
    "--quiet-pull",
];
/// Options of the same that take the next word as their value.
const CONTAINER_VALUED: &[&str] = &[
    "-u",
    "--user",
    "-w",
    "--workdir",
    "-e",
    "--env",
    "--env-file",
    "--index",
    "--entrypoint",
    "--name",
    "-p",
    "--publish",
    "-v",
    "--volume",
    "-l",
    "--label",
    "--detach-keys",
];

/// The command a container runs: `docker|podman|nerdctl exec [OPTIONS] CONTAINER command…`,
/// `docker compose exec [OPTIONS] SERVICE command…` (also `docker-compose` and
/// `podman-compose`), and `compose run` when `with_run`. `None` for any other command, or
/// when no command follows the container. An option it does not know is taken for one
/// with no value and `known` is false.
pub(super) fn container_command(
    program: &str,
    arguments: &[&str],
    with_run: bool,
) -> Option<ContainerCommand> {
    let verb = |text: &str| text == "exec" || (with_run && text == "run");
    let after = match (program, arguments) {
        ("docker" | "podman" | "nerdctl", ["compose", word, ..]) if verb(word) => 2,
        ("docker-compose" | "podman-compose", [word, ..]) if verb(word) => 1,
        ("docker" | "podman" | "nerdctl", ["exec", ..]) => 1,
        _ => return None,
    };
    let mut at = after;
    let mut known = true;
    while let Some(text) = arguments.get(at) {
        let option = text.split_once('=').map_or(*text, |(option, _)| option);
        if CONTAINER_VALUED.contains(text) {
            at += 2;
        } else if CONTAINER_FLAGS.contains(text)
            || (text.starts_with("--") && CONTAINER_VALUED.contains(&option))
        {
            at += 1;
        } else if text.starts_with('-') {
            known = false;
            at += 1;
        } else {
            break;
        }
    }
    // The container or service, then its command.
    let start = at + 1;
    (start < arguments.len()).then_some(ContainerCommand { start, known })
}

/// ssh options (one letter) that take a value.
const SSH_VALUES: &str = "bcDEeFIiJLlmOopQRSWw";
/// ssh options that only change how it signs in or prints: a remote command run with
/// only these is "run this there and show what it says".
const SSH_PLAIN_VALUES: &str = "bceiJlmp";
const SSH_PLAIN_FLAGS: &str = "46CqvtTnxakK";
/// `-o` settings that do not run local programs, forward anything or send local data.
const SSH_PLAIN_SETTINGS: &[&str] = &[
    "stricthostkeychecking",
    "connecttimeout",
    "userknownhostsfile",
    "globalknownhostsfile",
    "batchmode",
    "serveraliveinterval",
    "serveralivecountmax",
    "loglevel",
    "port",
    "user",
    "identityfile",
    "identitiesonly",
    "compression",
    "connectionattempts",
    "addressfamily",
    "hostkeyalias",
    "preferredauthentications",
    "pubkeyauthentication",
    "passwordauthentication",
    "numberofpasswordprompts",
    "requesttty",
    "checkhostip",
    "tcpkeepalive",
    "hashknownhosts",
    "updatehostkeys",
    "visualhostkey",
];

/// The words of the command an `ssh` line runs on the other machine, when it only signs
/// in and runs it (no forwarding, tunnels, agent, X11, control sockets, subsystems,
/// configuration files or settings that run local programs); `None` otherwise or when
/// there is no command. Options may follow the destination (`ssh host -i key cmd`), as
/// ssh reads them; the command starts at the first word after the destination that is
/// not an option.
fn ssh_remote_command(arguments: &[Word]) -> Option<&[Word]> {
    let mut index = 0;
    let mut destination = false;
    while let Some(word) = arguments.get(index) {
        let text = word.text.as_str();
        if word.dynamic {
            return None;
        }
        if text == "--" {
            index += 1;
            if !destination {
                arguments.get(index).filter(|word| !word.dynamic)?;
                destination = true;
                index += 1;
            }
            break;
        }
        if !(text.len() > 1 && text.starts_with('-')) {
            if destination {
                break;
            }
            destination = true;
            index += 1;
            continue;
        }
        for (at, letter) in text.char_indices().skip(1) {
            if SSH_VALUES.contains(letter) {
                let rest = &text[at + 1..];
                let value = if rest.is_empty() {
                    index += 1;
                    arguments
                        .get(index)
                        .filter(|value| !value.dynamic)?
                        .text
                        .as_str()
                } else {
                    rest
                };
                let plain = SSH_PLAIN_VALUES.contains(letter)
                    || (letter == 'o' && {
                        let setting = value
                            .split(['=', ' '])
                            .next()
                            .unwrap_or_default()
                            .to_ascii_lowercase();
                        SSH_PLAIN_SETTINGS.contains(&setting.as_str())
                    });
                if !plain {
                    return None;
                }
                break;
            }
            if !SSH_PLAIN_FLAGS.contains(letter) {
                return None;
            }
        }
        index += 1;
    }
    let command = arguments.get(index..)?;
    (destination && !command.is_empty()).then_some(command)
}

/// A remote operand's path as the other machine reads it, without a working directory:
/// `host:/srv/x` is `/srv/x`, `host:x` and `host:~/x` are in its home.
fn remote_path(operand: &str) -> Option<String> {
    let (_, path) = operand.split_once(':')?;
    let path = if path.is_empty() {
        "~".to_string()
    } else if path.starts_with('/') || path == "~" || path.starts_with("~/") {
        path.to_string()
    } else {
        format!("~/{path}")
    };
    crate::matcher::path::normalize(&path)
}

impl Judge<'_> {
    /// `ssh … host 'command'`: a remote command that only reads anything but credential
    /// material is a read; one that reads credentials is credential access.
    pub(super) fn ssh(&mut self, arguments: &[Word], nesting: usize, facts: &mut SegmentFacts) {
        // `-o ProxyCommand=…`, `-oLocalCommand=…`: a program run here.
        let settings = arguments.iter().enumerate().filter_map(|(index, word)| {
            match word.text.strip_prefix("-o") {
                Some("") => arguments.get(index + 1),
                Some(_) => Some(word),
                None => None,
            }
        });
        for setting in settings {
            let value = setting.text.strip_prefix("-o").unwrap_or(&setting.text);
            if setting.dynamic || ssh_option_runs(value) {
                facts.classes.insert(Class::Unknown);
            }
        }
        // `ssh -G host` prints the settings it would use and connects nowhere.
        if arguments.iter().any(|word| word.text == "-G") {
            facts.classes = remove(facts.classes, Class::Network);
            facts.classes.insert(Class::ReadOnly);
            return;
        }
        let Some(command) = ssh_remote_command(arguments) else {
            return;
        };
        if self.reads_elsewhere(command, true, nesting, facts) {
            facts.classes = remove(facts.classes, Class::Network);
            facts.classes.insert(Class::ReadOnly);
        }
    }

    /// A command run in a container, a pod or a device, fed nothing here: judged there.
    pub(super) fn runs_elsewhere(
        &mut self,
        name: &str,
        arguments: &[Word],
        nesting: usize,
        facts: &mut SegmentFacts,
    ) {
        match name {
            "docker" | "podman" | "nerdctl" | "docker-compose" | "podman-compose" => {
                self.container_exec(name, arguments, nesting, facts)
            }
            "kubectl" => self.kubectl_exec(arguments, nesting, facts),
            "adb" => self.adb(arguments, nesting, facts),
            _ => {}
        }
    }

    /// `adb [-s SERIAL | -e | -d] COMMAND`: an Android device. An emulator (`-e`,
    /// `-s emulator-5554`) is a virtual device of this machine, the developer's own, as a
    /// container of the project is: what adb does to it (a shell command, an install, a
    /// push, `root`, `emu kill`) is the project's work. On any other device — a phone — a
    /// shell command that only reads (`adb shell pm list packages`, `getprop`) is a read;
    /// anything else is judged by the table (an install or a push asks). A file pushed is
    /// read here, and one pulled is written here.
    fn adb(&mut self, arguments: &[Word], nesting: usize, facts: &mut SegmentFacts) {
        let mut emulator = false;
        let mut index = 0;
        while let Some(word) = arguments.get(index) {
            match word.text.as_str() {
                _ if word.dynamic => return,
                "-e" => emulator = true,
                "-d" | "-a" => {}
                "-s" => {
                    let serial = arguments.get(index + 1).filter(|serial| !serial.dynamic);
                    emulator = serial.is_some_and(|serial| serial.text.starts_with("emulator-"));
                    index += 1;
                }
                "-t" | "-H" | "-P" | "-L" => index += 1,
                text if text.starts_with("wait-for-") => {}
                _ => break,
            }
            index += 1;
        }
        let Some((command, rest)) = arguments.get(index..).and_then(<[Word]>::split_first) else {
            return;
        };
        let local = |judge: &Self, words: &[Word], role: Role, facts: &mut SegmentFacts| {
            for word in words.iter().filter(|word| !word.text.starts_with('-')) {
                facts.files.push(judge.file(word, None, role));
            }
        };
        match command.text.as_str() {
            "push" => local(
                self,
                rest.split_last().map_or(rest, |(_, sources)| sources),
                Role::Read,
                facts,
            ),
            "pull" => local(self, rest.get(1..).unwrap_or_default(), Role::Change, facts),
            _ => {}
        }
        let shell = rest
            .iter()
            .position(|word| !matches!(word.text.as_str(), "-t" | "-T" | "-n" | "-x" | "-tt"))
            .map(|at| &rest[at..])
            .filter(|words| command.text == "shell" && !words.is_empty());
        let reads = shell.is_some_and(|words| self.reads_elsewhere(words, true, nesting, facts));
        if emulator && !reads {
            facts.classes = remove(facts.classes, Class::Unknown);
            facts.classes.insert(Class::Build);
        } else if reads {
            facts.classes = remove(facts.classes, Class::Unknown);
            facts.classes.insert(Class::ReadOnly);
        }
    }

    /// `docker exec [OPTIONS] CONTAINER command…` (Podman's and nerdctl's too) and `docker
    /// compose exec [OPTIONS] SERVICE command…`: a command that only reads in the container
    /// (`docker exec db psql -c "SELECT …"`) is a read; credential material read there is
    /// credential material, whichever of the spellings ran it.
    fn container_exec(
        &mut self,
        name: &str,
        arguments: &[Word],
        nesting: usize,
        facts: &mut SegmentFacts,
    ) {
        let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
        let Some(found) = container_command(name, &texts, false) else {
            return;
        };
        // An option this does not know may give the container more than a read needs.
        if !found.known || arguments[..found.start].iter().any(|word| word.dynamic) {
            return;
        }
        if self.reads_elsewhere(&arguments[found.start..], false, nesting, facts) {
            facts.classes = remove(facts.classes, Class::Deploy);
            facts.classes.insert(Class::ReadOnly);
        }
    }

    /// `kubectl [OPTIONS] exec [OPTIONS] POD -- command…`: a command that only reads in
    /// the pod (`kubectl exec deploy/api -- ls -la /app/config`) is a read there.
    fn kubectl_exec(&mut self, arguments: &[Word], nesting: usize, facts: &mut SegmentFacts) {
        if arguments.iter().any(|word| word.dynamic) {
            return;
        }
        let Some(separator) = arguments.iter().position(|word| word.text == "--") else {
            return;
        };
        let before = &arguments[..separator];
        let positionals: Vec<&str> = before
            .iter()
            .map(|word| word.text.as_str())
            .filter(|text| !text.starts_with('-'))
            .collect();
        // `exec` first of the words that are no option (an option's value may come first:
        // `-n payments exec …` has `payments` before it, which is looked past).
        if !positionals.contains(&"exec") {
            return;
        }
        let command = &arguments[separator + 1..];
        if !command.is_empty() && self.reads_elsewhere(command, false, nesting, facts) {
            facts.classes = remove(facts.classes, Class::Deploy);
            facts.classes.insert(Class::ReadOnly);
        }
    }

    /// Judges a command run on another machine or in a container, whose folders are
    /// unknown: whether it only reads, no credential material included. Credential access
    /// or search over there, and code fetched and run there, are added to `facts`.
    fn reads_elsewhere(
        &mut self,
        command: &[Word],
        through_shell: bool,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) -> bool {
        if command.iter().any(|word| word.dynamic) {
            return false;
        }
        // ssh joins its words with spaces and the remote shell reads the result; a
        // container gets the words as they are (an argv, no shell).
        let segments = if through_shell {
            let text = command
                .iter()
                .map(|word| word.text.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            match parse_command(&text, nesting + 1) {
                Ok(segments) => segments,
                Err(_) => return false,
            }
        } else {
            let mut segments = Vec::new();
            crate::matcher::shell::push_with_nested(
                Segment::of(command.to_vec()),
                nesting + 1,
                &mut segments,
            );
            segments
        };
        let remote = Context::unknown();
        let mut judge = Judge::new(self.table, &remote, any_feeds_code(&segments));
        judge.computed = super::computed::computed_variables(&segments);
        judge.all(&segments, None, nesting + 1);
        // `echo $DATABASE_URL` over there prints the secret here.
        for segment in &mut judge.out {
            if prints_secret_variable(&segment.text, &judge.computed, false) {
                segment.classes.insert(Class::CredentialAccess);
            }
        }
        // Code fetched and run over there (`ssh host 'curl … | sh'`) is fetched code.
        for class in [
            Class::CredentialAccess,
            Class::CredentialSearch,
            Class::RemoteCode,
        ] {
            if judge
                .out
                .iter()
                .any(|segment| segment.classes.contains(class))
            {
                facts.classes.insert(class);
            }
        }
        judge.out.iter().all(|segment| {
            !segment.classes.is_empty()
                && segment.classes.is_subset(ClassSet::of(&[Class::ReadOnly]))
                && segment
                    .files
                    .iter()
                    .zip(&segment.credential)
                    // The folder a read runs in over there is no file it reads.
                    .filter(|(file, _)| file.role != Role::Workdir)
                    .all(|(file, credential)| file.path.is_some() && !credential)
        })
    }

    /// `HOST:PATH` copied from another machine or a container: credential material
    /// named there is credential access (a credential folder's entry, a search).
    pub(super) fn remote_source(&self, operand: &str, facts: &mut SegmentFacts) {
        let Some(path) = remote_path(operand) else {
            facts.classes.insert(Class::CredentialAccess);
            return;
        };
        let remote = Context::unknown();
        let named = |list: &crate::matcher::path::PathList, extent| {
            list.any_resolved(&path, extent, Side::Restrict, &remote, true)
        };
        if named(&self.table.credentials, Extent::Tree) {
            facts.classes.insert(Class::CredentialAccess);
        } else if named(&self.table.credential_dirs, Extent::Entry) {
            facts.classes.insert(Class::CredentialSearch);
        }
    }

    /// `scp host:x ./dir`, `rsync -a host:/srv/x/ ./x/`: every source on another machine
    /// and the destination here is a download (the destination is judged as written).
    /// Credential material named over there is credential access.
    pub(super) fn remote_copy(&self, layout: &CopyLayout, facts: &mut SegmentFacts) {
        let (sources, destination) = match (&layout.target, layout.operands.split_last()) {
            (Some(target), _) => (&layout.operands[..], target),
            (None, Some((last, sources))) => (sources, last),
            (None, None) => return,
        };
        for source in sources.iter().filter(|word| is_remote_operand(&word.text)) {
            self.remote_source(&source.text, facts);
        }
        let download = !sources.is_empty()
            && sources
                .iter()
                .all(|word| !word.dynamic && is_remote_operand(&word.text))
            && !is_remote_operand(&destination.text)
            && !layout.runs
            && !layout.removes_sources;
        if download {
            facts.classes = remove(facts.classes, Class::Network);
            facts.classes.insert(Class::Fetch);
        }
    }
}
