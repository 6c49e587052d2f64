//! Docker on this machine for the project's own work: a container run from an image with
//! nothing of the machine given to it but the project's folders, and the containers and
//! images such work leaves, stopped, started or removed by name. The table names these
//! commands `deploy` (Docker may be another machine's, a container may be given the whole
//! machine); read here, they are the build they are, as `docker compose up` is.
//!
//! Not such work, and left as the table has it: a daemon named by `-H`, `--host` or
//! `--context` (or by `DOCKER_HOST`, judged with the line's assignments), a container given
//! the host's processes, network namespaces, devices, capabilities or security settings, a
//! container restarted by the daemon on its own (`--restart always` outlives the session),
//! a bind mount of anything outside the project and the temporary folders (the Docker
//! socket, the home, `/`), an `--entrypoint` that is no plain program name or path, and
//! anything computed at run time (`$(docker ps -q)`). A plain entry point runs the
//! container's command words, judged as that command line (`--entrypoint /bin/sh IMAGE -c
//! '…'`; an empty one, `--entrypoint=""`, runs the words alone).

use super::*;

/// What a container is given of this machine, read from `docker run`'s options.
enum Given {
    /// Nothing beyond the project's folders: the run is the project's build.
    Project,
    /// More than that, or options the reader does not know.
    More,
}

impl Judge<'_> {
    /// What `docker ARGUMENTS` does beyond its class: `deploy` on a daemon its options
    /// name elsewhere; `build` for local work for the project (below).
    pub(super) fn docker_work(
        &mut self,
        arguments: &[Word],
        cwd: Option<&str>,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) {
        if names_other_daemon(arguments)
            && !facts.classes.is_subset(ClassSet::of(&[Class::ReadOnly]))
        {
            facts.classes.insert(Class::Deploy);
        }
        if !facts.classes.contains(Class::Deploy) {
            self.docker_copy(arguments, cwd, facts);
        }
        // `docker run --rm -v "$PWD:/src" rust:1 cargo test`, `docker stop app-test`: this
        // machine's containers doing the project's work.
        if (facts.classes.contains(Class::Deploy) || facts.classes.contains(Class::Discard))
            && self.local_docker(arguments, cwd, nesting)
        {
            facts.classes = remove(remove(facts.classes, Class::Deploy), Class::Discard);
            facts.classes.insert(Class::Build);
        }
    }

    /// `docker cp [-aLq] CONTAINER:PATH LOCAL` and `docker cp LOCAL CONTAINER:PATH`: a copy
    /// between this machine's container and a file here, which is written (out of the
    /// container) or read (into it) as a copy's file is, judged where it lies; credential
    /// material named in the container is credential material. Anything else (a stream
    /// `-`, two containers, a computed word) stays as the table has it.
    fn docker_copy(&self, arguments: &[Word], cwd: Option<&str>, facts: &mut SegmentFacts) {
        let Some(at) = arguments.iter().position(|word| word.text == "cp") else {
            return;
        };
        // `docker cp` or `docker container cp`, after the daemon's own options.
        let before = &arguments[..at];
        if before
            .iter()
            .any(|word| !word.text.starts_with('-') && word.text != "container")
            || arguments.iter().any(|word| word.dynamic)
        {
            return;
        }
        let mut operands = Vec::new();
        for word in &arguments[at + 1..] {
            match word.text.as_str() {
                "-a" | "--archive" | "-L" | "--follow-link" | "-q" | "--quiet" => {}
                text if text.starts_with('-') => return,
                _ => operands.push(word),
            }
        }
        // A drive letter (`C:\x`) names a local path, not a container.
        let in_container = |word: &Word| {
            is_remote_operand(&word.text)
                && word
                    .text
                    .split_once(':')
                    .is_some_and(|(name, _)| name.len() > 1)
        };
        let (local, container, role) = match operands.as_slice() {
            [source, target] if in_container(source) && !in_container(target) => {
                (*target, *source, Role::Change)
            }
            [source, target] if !in_container(source) && in_container(target) => {
                (*source, *target, Role::Read)
            }
            _ => return,
        };
        if role == Role::Change {
            self.remote_source(&container.text, facts);
        }
        facts.classes = remove(remove(facts.classes, Class::Unknown), Class::Fetch);
        facts.classes.insert(Class::Build);
        facts.files.push(self.file(local, cwd, role));
    }

    /// Whether the segment runs Docker after the line exported a daemon elsewhere.
    pub(super) fn docker_elsewhere(&self, segment: &Segment) -> bool {
        self.exported_elsewhere
            && segment
                .words
                .iter()
                .find(|word| !is_assignment(&word.text))
                .is_some_and(|word| {
                    matches!(
                        basename(&word.text),
                        "docker" | "docker-compose" | "podman" | "podman-compose" | "nerdctl"
                    )
                })
    }

    /// `export DOCKER_HOST=ssh://…`, `KUBECONFIG=~/.kube/prod; …`: for what follows in the
    /// line, Docker's daemon is elsewhere or the cluster is the kubeconfig's.
    pub(super) fn note_exported(&mut self, segment: &Segment) {
        let assigns_only = segment.words.iter().all(|word| is_assignment(&word.text));
        let exported = match segment.words.split_first() {
            Some((first, rest)) if first.text == "export" && !first.dynamic => rest,
            _ if assigns_only => segment.words.as_slice(),
            _ => &[],
        };
        if exported.iter().any(|word| {
            programs::names_remote_docker(&word.text, word.dynamic)
                || word.text.starts_with("KUBECONFIG=")
        }) {
            self.exported_elsewhere = true;
        }
    }

    /// Whether `docker ARGUMENTS` is local work for the project; the command a run hands
    /// its container is judged too (into `self.out`), as the project's command it is when
    /// the project is mounted (`docker run --rm -v "$PWD:/w" node:20 npm install`
    /// installs).
    pub(super) fn local_docker(
        &mut self,
        arguments: &[Word],
        cwd: Option<&str>,
        nesting: usize,
    ) -> bool {
        let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
        let (verb, rest) = match texts.as_slice() {
            ["container" | "image", verb, rest @ ..] => (*verb, rest),
            [verb, rest @ ..] => (*verb, rest),
            [] => return false,
        };
        let words = &arguments[arguments.len() - rest.len()..];
        // What the shell computes before Docker sees it may name anything; the command a
        // container runs is judged on its own.
        let fixed = |words: &[Word]| {
            words.iter().all(|word| {
                !word.dynamic || word.text.starts_with("$PWD") || word.text.starts_with("${PWD}")
            })
        };
        if !fixed(&arguments[..arguments.len() - rest.len()]) {
            return false;
        }
        match verb {
            "run" | "create" => match self.container_given(words, cwd) {
                (Given::Project, command, entrypoint) => {
                    let options =
                        command.map_or(words.len(), |command| words.len() - command.len());
                    if !fixed(&words[..options]) {
                        return false;
                    }
                    match entrypoint.filter(|program| !program.is_empty()) {
                        // `--entrypoint /bin/sh IMAGE -c '…'`: the program named, handed
                        // the command's words.
                        Some(program) => {
                            let text =
                                format!("{program} {}", shell_join(command.unwrap_or_default()));
                            self.nested(text.trim_end(), cwd, nesting);
                        }
                        // Words starting with an option are the image's own program's
                        // (`docker run ttyd --help`); a command names its program first
                        // (also after an emptied entry point, `--entrypoint=""`).
                        None => {
                            if let Some(command) = command.filter(|command| {
                                command
                                    .first()
                                    .is_some_and(|first| !first.text.starts_with('-'))
                            }) {
                                let text = shell_join(command);
                                self.nested(&text, cwd, nesting);
                            }
                        }
                    }
                    true
                }
                (Given::More, _, _) => false,
            },
            // Containers by name: stopped, started, removed (with their anonymous
            // volumes only under `-v`, which is left as it is).
            "stop" | "start" | "restart" | "kill" | "rm" | "pause" | "unpause" | "wait"
            | "rename" => {
                fixed(words)
                    && !rest.is_empty()
                    && rest.iter().all(|text| {
                        matches!(*text, "-f" | "--force" | "-t" | "--time")
                            || !text.starts_with('-')
                            || text.starts_with("--time=")
                            || text.starts_with("--signal=")
                    })
            }
            // Images by name; dangling images only (`-a` takes every unused one).
            "rmi" => {
                fixed(words)
                    && !rest.is_empty()
                    && rest
                        .iter()
                        .all(|text| !text.starts_with('-') || *text == "-f")
            }
            "prune" => {
                texts.first() == Some(&"image")
                    && rest.iter().all(|text| matches!(*text, "-f" | "--force"))
            }
            _ => false,
        }
    }

    /// What `docker run OPTIONS IMAGE COMMAND…` gives its container, the command, and the
    /// program `--entrypoint` names instead of the image's (a plain name or path, or empty).
    fn container_given<'w>(
        &self,
        words: &'w [Word],
        cwd: Option<&str>,
    ) -> (Given, Option<&'w [Word]>, Option<&'w str>) {
        let mut index = 0;
        let mut entrypoint = None;
        while let Some(word) = words.get(index) {
            let text = word.text.as_str();
            if !text.starts_with('-') {
                return (Given::Project, words.get(index + 1..), entrypoint);
            }
            let (option, attached) = match text.split_once('=') {
                Some((option, value)) if option.starts_with("--") => (option, Some(value)),
                _ => (text, None),
            };
            let value = |index: usize| -> Option<&'w str> {
                match attached {
                    Some(_) => None,
                    None => words.get(index + 1).map(|word| word.text.as_str()),
                }
            };
            match option {
                "--rm" | "-d" | "--detach" | "-i" | "-t" | "-it" | "-ti" | "--interactive"
                | "--tty" | "--init" | "--read-only" | "-P" | "--publish-all" | "-q"
                | "--quiet" | "--no-healthcheck" => {}
                "-p" | "--publish" | "--name" | "-e" | "--env" | "--env-file" | "-w"
                | "--workdir" | "--platform" | "-u" | "--user" | "-m" | "--memory" | "--cpus"
                | "--gpus" | "--shm-size" | "-h" | "--hostname" | "-l" | "--label" | "--pull"
                | "--stop-timeout" | "--add-host" | "--ulimit" | "--tmpfs" | "--network"
                | "--net" | "-a" | "--attach" | "--expose" | "--health-cmd" | "--log-driver"
                | "--stop-signal" | "--dns" => {
                    if matches!(option, "--network" | "--net")
                        && attached
                            .or_else(|| value(index))
                            .is_some_and(|value| value.starts_with("container:"))
                    {
                        return (Given::More, None, None);
                    }
                    if attached.is_none() {
                        index += 1;
                    }
                }
                "--restart" => {
                    if attached.or_else(|| value(index)) != Some("no") {
                        return (Given::More, None, None);
                    }
                    if attached.is_none() {
                        index += 1;
                    }
                }
                "-v" | "--volume" | "--mount" => {
                    let Some(spec) = attached.or_else(|| value(index)) else {
                        return (Given::More, None, None);
                    };
                    if !self.mounts_only_project(spec, option == "--mount", cwd) {
                        return (Given::More, None, None);
                    }
                    if attached.is_none() {
                        index += 1;
                    }
                }
                "--entrypoint" => {
                    let program = attached.or_else(|| value(index)).unwrap_or("-");
                    if program.starts_with('-')
                        || !program
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
                    {
                        return (Given::More, None, None);
                    }
                    entrypoint = Some(program);
                    if attached.is_none() {
                        index += 1;
                    }
                }
                _ => return (Given::More, None, None),
            }
            index += 1;
        }
        (Given::More, None, None)
    }

    /// Whether a volume given to a container (`SRC:DST[:MODE]`, or `--mount`'s
    /// `type=bind,source=SRC,…`) is a named volume or a folder of the project or a
    /// temporary folder.
    fn mounts_only_project(&self, spec: &str, mount: bool, cwd: Option<&str>) -> bool {
        let source = match mount_source(spec, mount) {
            Mount::Volume => return true,
            Mount::Unknown => return false,
            Mount::Host(source) => source,
        };
        let Some(text) = self.known_variables(source, cwd) else {
            return false;
        };
        let Some(path) = self.context.resolve_from(&text, cwd) else {
            return false;
        };
        !path.ends_with("docker.sock") && self.inside_work_area(&path)
    }
}

/// Words as one shell line that reads back as the same words.
fn shell_join(words: &[Word]) -> String {
    words
        .iter()
        .map(|word| {
            let text = word.text.as_str();
            if !text.is_empty()
                && text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+-,".contains(c))
            {
                text.to_owned()
            } else {
                format!("'{}'", text.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `docker`'s own options point it at a daemon that may be another machine's
/// (`-H ssh://…`, `--host tcp://…`, `--context prod`).
pub(super) fn names_other_daemon(arguments: &[Word]) -> bool {
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if !text.starts_with('-') {
            return false;
        }
        let (option, attached) = match text.split_once('=') {
            Some((option, value)) => (option, Some(value.to_owned())),
            None => (text, None),
        };
        let variable = match option {
            "-H" | "--host" => "DOCKER_HOST",
            "--context" | "-c" => "DOCKER_CONTEXT",
            _ => continue,
        };
        let value = attached.or_else(|| words.next().map(|value| value.text.clone()));
        let dynamic = word.dynamic || value.is_none();
        if programs::docker_elsewhere(variable, &value.unwrap_or_default(), dynamic) {
            return true;
        }
    }
    false
}

/// What a `-v`/`--volume` spec (`SRC:DST[:OPTS]`) or a `--mount` spec (`type=bind,source=
/// SRC,…`) gives a container.
enum Mount<'s> {
    /// A named or anonymous volume, or a `tmpfs`: no folder of the host.
    Volume,
    /// A folder or file of the host, as written.
    Host(&'s str),
    /// A mount the reader does not know.
    Unknown,
}

/// Reads a mount spec (see [`Mount`]). A Windows source keeps its drive (`C:\x:/y`).
fn mount_source(spec: &str, mount: bool) -> Mount<'_> {
    if mount {
        let fields: Vec<(&str, &str)> = spec
            .split(',')
            .filter_map(|field| field.split_once('='))
            .collect();
        let kind = fields
            .iter()
            .find(|(key, _)| *key == "type")
            .map_or("volume", |(_, value)| *value);
        return match kind {
            "volume" | "tmpfs" => Mount::Volume,
            "bind" => fields
                .iter()
                .find(|(key, _)| matches!(*key, "source" | "src"))
                .map_or(Mount::Unknown, |(_, source)| Mount::Host(source)),
            _ => Mount::Unknown,
        };
    }
    let drive = spec.as_bytes().get(1) == Some(&b':')
        && spec.starts_with(|c: char| c.is_ascii_alphabetic())
        && matches!(spec.as_bytes().get(2), Some(b'\\' | b'/'));
    let skip = if drive { 2 } else { 0 };
    let source = match spec[skip..].split_once(':') {
        Some((source, _)) => &spec[..skip + source.len()],
        // `-v /data`: an anonymous volume at that place in the container.
        None if spec.starts_with('/') => return Mount::Volume,
        None => return Mount::Unknown,
    };
    let named = !source.is_empty()
        && source
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !source.starts_with('.');
    if named {
        Mount::Volume
    } else {
        Mount::Host(source)
    }
}
