//! Where a call happens (DESIGN.md §11.2): its working directory, its project and the
//! agent user's home, which the `{project}`, `{home}` and `{tmp}` anchors of path matchers
//! and the command classes resolve against.
//!
//! Resolution is lexical, like [`crate::matcher::path::normalize`]: the gateway may not run
//! on the machine where the tool runs, so nothing here asks the filesystem. A value that is
//! not absolute is treated as absent: a relative `cwd` resolves nothing.

use crate::matcher::path::{
    application_settings_folder, is_absolute, is_windows, normalize, posix_drive_path, TMP_DIRS,
};
use crate::matcher::shell::classify::CommandFacts;
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

/// What `~` stands for when the call's home is unknown.
pub const UNKNOWN_HOME: &str = "/~";

/// Which command line (its text: a command built from an argv array is a temporary whose
/// address a later one may reuse), classified by which class table (its address, alive
/// for as long as the policy that holds it).
type CacheKey = (String, usize);

/// The call's place, as the matchers see it.
#[derive(Debug, Default)]
pub struct Context {
    cwd: Option<String>,
    project: Option<String>,
    home: Option<String>,
    /// The call's folder is known and is no project (the home, a folder holding it, `/`,
    /// a drive's root): `{project}` then names nothing, where an unknown project may be
    /// anything.
    projectless: bool,
    /// The call was made on Windows (its `cwd`, project or home is a drive path): a POSIX
    /// shell there writes drives as `/c/…` ([`Context::native`]).
    windows: bool,
    /// The call's shell is PowerShell (Claude Code's `PowerShell` tool), whatever the
    /// system: its command lines are read as PowerShell.
    powershell: bool,
    /// On Windows with a known home, the user's temporary folder
    /// (`%TEMP%`: `~/AppData/Local/Temp`), which `{tmp}` names beside `/tmp`.
    temp: Option<String>,
    /// The last command line classified during this evaluation, keyed by its text and the
    /// class table that judged it: every class rule of a policy looks at
    /// the same `command` argument, and classifying it once keeps evaluation within its
    /// budget. A replay judging one call under two policies shares the context, and so the
    /// classification when both use the same table.
    cache: RefCell<Option<(CacheKey, Rc<CommandFacts>)>>,
}

impl Context {
    /// The context of a call; values that are not absolute paths count as absent.
    pub fn new(cwd: Option<&str>, project: Option<&str>, home: Option<&str>) -> Context {
        let absolute =
            |value: Option<&str>| value.filter(|value| is_absolute(value)).and_then(normalize);
        let cwd = absolute(cwd);
        let home = absolute(home);
        let project = absolute(project);
        let windows = [&cwd, &project, &home]
            .into_iter()
            .any(|folder| folder.as_deref().is_some_and(is_windows));
        // The project holds the working directory; without one it is the directory itself.
        // The home folder and `/` are never a project: an agent started there would have
        // all of it for its work area (`mv Documents /tmp/x`, every dotfile). Such a call
        // has no project, and what it changes is judged by where it lies.
        let same = |a: &str, b: &str| {
            let (a, b) = (a.trim_end_matches('/'), b.trim_end_matches('/'));
            if windows {
                a.eq_ignore_ascii_case(b)
            } else {
                a == b
            }
        };
        let given = project.is_some();
        let candidate = project.or_else(|| cwd.clone());
        let projectless = candidate.is_some();
        let project = candidate.filter(|project| {
            // Nor, when it is only the working directory, a folder where applications keep
            // their settings (the editor's `User` folder): a work tree found there is one.
            if !given && application_settings_folder(project, home.as_deref()) {
                return false;
            }
            let drive_root = windows && project.len() == 3 && project.ends_with(':');
            // Nor a folder that holds the home (`/home`, `/Users`): the home would be in it.
            let holds_home = home.as_deref().is_some_and(|home| {
                let prefix = format!("{}/", project.trim_end_matches('/'));
                same(project, home)
                    || if windows {
                        home.to_ascii_lowercase()
                            .starts_with(&prefix.to_ascii_lowercase())
                    } else {
                        home.starts_with(&prefix)
                    }
            });
            !same(project, "") && !drive_root && !holds_home
        });
        let temp = home
            .as_deref()
            .filter(|home| is_windows(home))
            .map(|home| format!("{home}/appdata/local/temp"));
        Context {
            projectless: projectless && project.is_none(),
            cwd,
            project,
            home,
            windows,
            powershell: false,
            temp,
            cache: RefCell::new(None),
        }
    }

    /// The same place for a call that says which folder it runs in: its `cwd` argument
    /// (`shell.exec {command, cwd}`: Codex's `workdir`, Gemini's `dir_path`), resolved
    /// against the call's own `cwd`. Its relative paths are judged there, while the project
    /// stays the call's: a command run in a folder outside the project changes what lies
    /// outside it. An argument that cannot be placed (not a string, not resolvable) leaves
    /// no working directory at all (fail closed), and without a call `cwd` the argument
    /// places nothing either: only the call's own place can satisfy an anchor.
    ///
    /// A call made where there is no project (the agent was started in the home) that runs
    /// in a folder of the home which can be one (`~/studio2`, `~/code/app`: no hidden
    /// folder on the way, not one of the home's own folders such as `~/Documents`) has that
    /// folder for its project, as an agent started there would.
    pub fn running_in(self, arguments: &serde_json::Value) -> Context {
        let Some(folder) = arguments.get("cwd").filter(|folder| !folder.is_null()) else {
            return self;
        };
        let cwd = folder
            .as_str()
            .filter(|_| self.cwd.is_some())
            .and_then(|folder| self.resolve(folder));
        let windows = self.windows || cwd.as_deref().is_some_and(is_windows);
        let work_folder = cwd
            .as_deref()
            .filter(|_| self.projectless)
            .filter(|folder| self.may_be_project(folder))
            .map(str::to_owned);
        let moved = Context {
            cwd,
            windows,
            cache: RefCell::new(None),
            ..self
        };
        match work_folder {
            Some(folder) => moved.with_project(folder),
            None => moved,
        }
    }

    /// The place a script file's commands run in: its own folder (a script is run from
    /// where it lies, or goes there first), with the call's project, home and system. A
    /// folder that is no absolute path leaves no working directory (fail closed).
    pub(crate) fn in_folder(&self, folder: &str) -> Context {
        Context {
            cwd: Some(folder)
                .filter(|folder| is_absolute(folder))
                .and_then(normalize),
            project: self.project.clone(),
            home: self.home.clone(),
            projectless: self.projectless,
            windows: self.windows,
            powershell: self.powershell,
            temp: self.temp.clone(),
            cache: RefCell::new(None),
        }
    }

    /// The same place with `folder` for its project: a call made in the home that works in
    /// a folder of it ([`Context::running_in`], [`Context::entering`],
    /// [`Context::writing_in`]).
    fn with_project(self, folder: String) -> Context {
        Context {
            project: Some(folder),
            projectless: false,
            cache: RefCell::new(None),
            ..self
        }
    }

    /// The same place for a command line that starts by entering a folder (`cd ~/app &&
    /// npm test`): made where there is no project, it has that folder for its project when
    /// the folder can be one (as for a `cwd` argument, [`Context::running_in`]). Only a
    /// literal folder, entered first, counts: the rest of the line runs there.
    pub fn entering(self, arguments: &serde_json::Value) -> Context {
        if !self.projectless {
            return self;
        }
        let Some(folder) = arguments
            .get("command")
            .and_then(serde_json::Value::as_str)
            .and_then(crate::matcher::shell::folder_entered_first)
        else {
            return self;
        };
        let Some(folder) = self.resolve(&folder) else {
            return self;
        };
        if !self.may_be_project(&folder) {
            return self;
        }
        self.with_project(folder)
    }

    /// The same place for a call made where there is no project (the agent was started in
    /// the home) whose `path` argument (or first of its `paths`) names a file in a folder of
    /// the home that can be a project (`~/llm-train/llm/ffn.py`, `~/code/app/src/main.rs`):
    /// the outermost such folder holding the file (`~/llm-train`, `~/code/app`) is the
    /// call's project, as for the folder a call runs in ([`Context::running_in`]). A file
    /// directly in the home or in one of the home's own folders (`~/notes.md`,
    /// `~/Documents/cv.md`), or below a hidden folder (`~/.config/…`), gives none.
    pub fn writing_in(self, arguments: &serde_json::Value) -> Context {
        if !self.projectless {
            return self;
        }
        let named = arguments
            .get("path")
            .or_else(|| arguments.get("paths").and_then(|paths| paths.get(0)))
            .and_then(serde_json::Value::as_str);
        let Some(file) = named.and_then(|file| self.resolve(file)) else {
            return self;
        };
        let Some(folder) = file
            .match_indices('/')
            .map(|(at, _)| &file[..at])
            .find(|folder| self.may_be_project(folder))
            .map(str::to_owned)
        else {
            return self;
        };
        self.with_project(folder)
    }

    /// Whether `folder` (absolute, normalised) lies in the home (or a web server's
    /// `/var/www`), below it, with no hidden
    /// folder on the way, not one of the folders the home keeps the person's own files or
    /// projects in (`Documents`, `Desktop`, `OneDrive/Desktop`, `code`, `work`…: a project
    /// may lie in one, not be one), and not in one that holds the system's or tools' own
    /// files (`Library`, `AppData`, `bin`, `snap`…).
    fn may_be_project(&self, folder: &str) -> bool {
        const HOME_FOLDERS: &[&str] = &[
            "desktop",
            "documents",
            "downloads",
            "pictures",
            "music",
            "movies",
            "videos",
            "public",
            "onedrive",
            "dropbox",
            "google drive",
            "icloud drive",
            // Folders that hold projects: each project in one is a project of its own.
            "code",
            "dev",
            "src",
            "source",
            "projects",
            "repos",
            "git",
            "github",
            "work",
            "workspace",
            "workspaces",
            "developer",
            "sites",
            "sandbox",
        ];
        // Folders of the home that hold the system's or tools' own files, at any depth:
        // what lies in them runs or configures something (`~/Library/LaunchAgents`,
        // `~/AppData/Roaming/…/Startup`, installed packages), and is no project.
        const SYSTEM_FOLDERS: &[&str] = &[
            "library",
            "applications",
            "appdata",
            "snap",
            "bin",
            "go",
            "node_modules",
            "anaconda3",
            "miniconda3",
            "miniforge3",
            "mambaforge",
            "perl5",
        ];
        let Some(home) = self.home.as_deref() else {
            return false;
        };
        let (home, folder) = if self.windows {
            (home.to_lowercase(), folder.to_lowercase())
        } else {
            (home.to_owned(), folder.to_owned())
        };
        // A web server's root holds its sites, one folder each (`/var/www/shop`): a
        // project each, as in the home.
        let Some(rest) = folder
            .strip_prefix(&format!("{}/", home.trim_end_matches('/')))
            .or_else(|| {
                folder
                    .strip_prefix("/var/www/")
                    .filter(|rest| !rest.is_empty())
            })
        else {
            return false;
        };
        let parts: Vec<&str> = rest.split('/').filter(|part| !part.is_empty()).collect();
        let first = parts
            .first()
            .map(|part| part.to_lowercase())
            .unwrap_or_default();
        !parts.is_empty()
            && parts
                .iter()
                .all(|part| !part.starts_with('.') && !part.contains(['$', '%', '~', '`']))
            && !parts
                .iter()
                .all(|part| HOME_FOLDERS.contains(&part.to_lowercase().as_str()))
            && !SYSTEM_FOLDERS.contains(&first.as_str())
    }

    /// The same context, for a call whose shell is PowerShell when `powershell`.
    pub fn in_powershell(self, powershell: bool) -> Context {
        Context { powershell, ..self }
    }

    /// The same place for a PowerShell script (a `.ps1` file's text), with its own cache.
    pub fn as_powershell(&self) -> Context {
        Context {
            cwd: self.cwd.clone(),
            project: self.project.clone(),
            home: self.home.clone(),
            projectless: self.projectless,
            windows: self.windows,
            powershell: true,
            temp: self.temp.clone(),
            cache: RefCell::new(None),
        }
    }

    /// Whether the call's shell is PowerShell, whatever its command line looks like.
    pub fn powershell(&self) -> bool {
        self.powershell
    }

    /// A context that knows nothing: anchors never allow, relative paths stay relative.
    pub fn unknown() -> Context {
        Context::default()
    }

    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// Whether the call's project cannot be known (no folder given): a `{project}`
    /// pattern then may name anything. A call made in the home has no project, known.
    pub fn project_unknown(&self) -> bool {
        self.project.is_none() && !self.projectless
    }

    pub fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// The home, or, when it is unknown, a directory named `/~`: `~/x` then still means
    /// "in the home" (and matches `{home}` patterns), while no absolute path written out
    /// does, so an allow about the home never covers `/home/someone/x` by accident.
    pub fn home_or_tilde(&self) -> &str {
        self.home.as_deref().unwrap_or(UNKNOWN_HOME)
    }

    /// The temporary folders, which `{tmp}` names: `/tmp`, `/var/tmp` and, on Windows with
    /// a known home, the user's `%TEMP%`.
    pub fn temp_dirs(&self) -> [Option<&str>; 3] {
        [Some(TMP_DIRS[0]), Some(TMP_DIRS[1]), self.temp.as_deref()]
    }

    /// Whether the call was made on Windows (its `cwd`, project or home is a drive path).
    pub fn on_windows(&self) -> bool {
        self.windows
    }

    /// `value` as the system the call runs on reads it: on Windows, Git Bash's `/c/Users/me`
    /// is the drive path `c:/Users/me` ([`posix_drive_path`]); anything else as written.
    pub fn native<'v>(&self, value: &'v str) -> Cow<'v, str> {
        match self.windows.then(|| posix_drive_path(value)).flatten() {
            Some(drive) => Cow::Owned(drive),
            None => Cow::Borrowed(value),
        }
    }

    /// The absolute, lexically normalised path `value` names, seen from `cwd`; `None` when
    /// that cannot be known (a relative path where the working directory is unknown, as
    /// after `cd "$X"`, `~user`, a NUL byte). `~` without a known home is
    /// [`UNKNOWN_HOME`].
    pub fn resolve_from(&self, value: &str, cwd: Option<&str>) -> Option<String> {
        if value.is_empty() || value.contains('\0') {
            return None;
        }
        // `$HOME/x`, `%USERPROFILE%\x`: the home, as `~/x` is; `%TEMP%\x` the temporary
        // folder.
        let expanded = self.folder_variable(value);
        let value = expanded.as_deref().unwrap_or(value);
        let value = &*self.native(value);
        if is_absolute(value) {
            return normalize(value);
        }
        if let Some(rest) = value.strip_prefix('~') {
            let home = self.home_or_tilde();
            // A Windows home holds `~\.ssh` as `~/.ssh`, in any case (paths there are
            // read in lower case, as `windows_path` writes them).
            // So does a call made on Windows whose home is not known: `%USERPROFILE%\x`
            // is then `~/x` in the unknown home, never a file named `~\x` in the
            // working folder.
            let rest = match is_windows(home) || (self.windows && rest.starts_with('\\')) {
                true => Cow::Owned(rest.replace('\\', "/").to_lowercase()),
                false => Cow::Borrowed(rest),
            };
            if rest.is_empty() || rest.starts_with('/') {
                return normalize(&format!("{home}/{rest}"));
            }
            // `~name/x`: another user's home, not known here (`~+` and `~-`, the working
            // folders, and `~2`, the folder stack, neither); but a name no login can have
            // (`~$report.xlsx`, an office suite's lock file) the shell leaves as written: a
            // file of the working folder.
            let login = rest.split('/').next().unwrap_or(&rest);
            if login
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
            {
                return None;
            }
        }
        let cwd = cwd?;
        if is_windows(cwd) {
            // `backend\base.py` seen from `E:\app`: a Windows path too. `\x` starts at the
            // drive's top; `\\server\share` (another machine) and `C:x` (a folder another
            // drive remembers) cannot be placed.
            let value = value.replace('\\', "/").to_lowercase();
            if value.starts_with("//") || value.as_bytes().get(1) == Some(&b':') {
                return None;
            }
            if let Some(rooted) = value.strip_prefix('/') {
                return normalize(&format!("{}/{rooted}", &cwd[..3]));
            }
            return normalize(&format!("{cwd}/{value}"));
        }
        normalize(&format!("{cwd}/{value}"))
    }

    /// [`Context::resolve_from`] the call's working directory.
    pub fn resolve(&self, value: &str) -> Option<String> {
        self.resolve_from(value, self.cwd.as_deref())
    }

    /// The facts of a command line, computed once per evaluation.
    pub(crate) fn command_facts(
        &self,
        command: &str,
        table: usize,
        compute: impl FnOnce() -> CommandFacts,
    ) -> Rc<CommandFacts> {
        if let Some(((text, cached_table), facts)) = self.cache.borrow().as_ref() {
            if *cached_table == table && text == command {
                return facts.clone();
            }
        }
        let facts = Rc::new(compute());
        *self.cache.borrow_mut() = Some(((command.to_string(), table), facts.clone()));
        facts
    }
}

/// Variables that name a folder of the home (Windows' profile folders), as `~` paths.
const FOLDER_VARIABLES: &[(&str, &str)] = &[
    ("$home", "~"),
    ("${home}", "~"),
    ("%userprofile%", "~"),
    ("$env:userprofile", "~"),
    ("$env:home", "~"),
    ("${env:userprofile}", "~"),
    ("%appdata%", "~/AppData/Roaming"),
    ("$env:appdata", "~/AppData/Roaming"),
    ("%localappdata%", "~/AppData/Local"),
    ("$env:localappdata", "~/AppData/Local"),
];

/// The user's temporary folder on Windows, below the home.
pub const WINDOWS_TEMP: &str = "~/AppData/Local/Temp";

/// Variables that name the user's temporary folder on Windows.
const TEMP_VARIABLES: &[&str] = &["%temp%", "%tmp%", "$env:temp", "$env:tmp", "${env:temp}"];

/// What follows a leading `name` in `value`, when the rest is empty or starts a path below
/// it.
fn after_variable<'v>(value: &'v str, name: &str) -> Option<&'v str> {
    let head = value.get(..name.len())?;
    let rest = &value[name.len()..];
    (head.eq_ignore_ascii_case(name) && (rest.is_empty() || rest.starts_with(['/', '\\'])))
        .then_some(rest)
}

impl Context {
    /// `value` with a leading variable that names a folder of the home written out as a `~`
    /// path: the home (`$HOME`, `%USERPROFILE%`), its profile folders (`$env:APPDATA`) and,
    /// on Windows, its temporary folder (`%TEMP%`). `None` for anything else.
    pub fn folder_variable(&self, value: &str) -> Option<String> {
        if let Some((rest, folder)) = FOLDER_VARIABLES
            .iter()
            .find_map(|(name, folder)| Some((after_variable(value, name)?, folder)))
        {
            return Some(format!("{folder}{rest}"));
        }
        if !self.windows {
            return None;
        }
        TEMP_VARIABLES
            .iter()
            .find_map(|name| after_variable(value, name))
            .map(|rest| format!("{WINDOWS_TEMP}{rest}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run_in(cwd: &str, home: &str, folder: &str) -> Context {
        Context::new(Some(cwd), None, Some(home)).running_in(&json!({ "cwd": folder }))
    }

    #[test]
    fn a_folder_of_the_home_is_the_project_of_a_call_made_in_the_home() {
        let context = run_in("/home/dev", "/home/dev", "studio2/web");
        assert_eq!(context.project(), Some("/home/dev/studio2/web"));
        assert!(!context.project_unknown());
        // Windows: compared without case.
        let context = run_in(
            "C:\\Users\\Dev",
            "c:\\users\\dev",
            "C:\\Users\\Dev\\code\\app",
        );
        assert!(context.project().is_some());
    }

    #[test]
    fn a_line_that_enters_a_folder_of_the_home_first_works_there() {
        let home = || Context::new(Some("/home/dev"), None, Some("/home/dev"));
        let enter = |command: &str| home().entering(&json!({ "command": command }));
        assert_eq!(
            enter("cd ~/llm-train && python tests/t.py").project(),
            Some("/home/dev/llm-train")
        );
        assert_eq!(
            enter("cd \"/home/dev/my app\"; make").project(),
            Some("/home/dev/my app")
        );
        for command in [
            "cd ~/.config && rm -rf waybar",
            "cd $DIR && make",
            "cd ~/Documents && rm -rf x",
            "cd /opt/site && npm run build",
            "ls && cd ~/app && make",
            "cd ~/app",
        ] {
            assert_eq!(enter(command).project(), None, "{command}");
        }
        // Made in a project, a line keeps it.
        let context = Context::new(Some("/home/dev/app"), None, Some("/home/dev"))
            .entering(&json!({ "command": "cd ~/other && make" }));
        assert_eq!(context.project(), Some("/home/dev/app"));
    }

    #[test]
    fn a_file_written_in_a_folder_of_the_home_places_its_project() {
        let home = || Context::new(Some("/home/dev"), None, Some("/home/dev"));
        let write = |path: &str| {
            home()
                .writing_in(&json!({ "path": path }))
                .project()
                .map(str::to_owned)
        };
        assert_eq!(
            write("/home/dev/llm/arch/ffn.py").as_deref(),
            Some("/home/dev/llm")
        );
        assert_eq!(
            write("~/code/shop/src/a.ts").as_deref(),
            Some("/home/dev/code/shop")
        );
        assert_eq!(write("app/src/a.ts").as_deref(), Some("/home/dev/app"));
        assert_eq!(
            write("/home/dev/OneDrive/Desktop/game/a.cs").as_deref(),
            Some("/home/dev/OneDrive/Desktop/game")
        );
        for path in [
            "/home/dev/main.py",
            "/home/dev/Documents/cv.md",
            "/home/dev/OneDrive/Desktop/notes.md",
            "/home/dev/.config/waybar/style.css",
            "/home/dev/Library/LaunchAgents/x.plist",
            "/home/dev/go/src/x/main.go",
            "/home/dev/miniconda3/lib/site.py",
            "/etc/hosts",
        ] {
            assert_eq!(write(path), None, "{path}");
        }
        // The first of several paths places it; a call made in a project keeps its own.
        let context = home().writing_in(&json!({ "paths": ["/home/dev/a/x", "/home/dev/b/y"] }));
        assert_eq!(context.project(), Some("/home/dev/a"));
        let context = Context::new(Some("/home/dev/app"), None, Some("/home/dev"))
            .writing_in(&json!({ "path": "/home/dev/other/x" }));
        assert_eq!(context.project(), Some("/home/dev/app"));
    }

    #[test]
    fn hidden_folders_the_home_s_own_folders_and_other_places_are_no_project() {
        for folder in [
            "/home/dev/.config/waybar",
            "/home/dev/code/.venv",
            "/home/dev/Documents",
            "/home/dev",
            "/tmp/x",
            "/etc",
        ] {
            let context = run_in("/home/dev", "/home/dev", folder);
            assert_eq!(context.project(), None, "{folder}");
            assert!(!context.project_unknown(), "{folder}");
        }
        // A call made in a project keeps it, wherever it runs.
        let context = Context::new(Some("/home/dev/app"), None, Some("/home/dev"))
            .running_in(&json!({ "cwd": "/home/dev/other" }));
        assert_eq!(context.project(), Some("/home/dev/app"));
        // With no folder of its own, nothing is known.
        let context = Context::new(None, None, Some("/home/dev"))
            .running_in(&json!({ "cwd": "/home/dev/x" }));
        assert!(context.project_unknown());
    }
}
