//! Calls in PowerShell text that only compute a value: a string's or list's own methods and
//! .NET static calls that convert, encode, do arithmetic or join paths. Any other call may
//! do anything, and the line holding it is code nobody can read before it runs.

/// A .NET static call that only computes a value from its arguments:
/// `[Convert]::FromBase64String(…)`, `[Text.Encoding]::UTF8.GetString(…)`,
/// `[Math]::Round(…)`, `[IO.Path]::Combine(…)`. Decoding is data until something runs it
/// (`iex`, a script block), which is judged apart.
pub(super) fn pure_static_call(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let Some((kind, member)) = lower.split_once("]::") else {
        return false;
    };
    let kind = kind.trim_start_matches('[').trim_start_matches("system.");
    let method = member.rsplit('.').next().unwrap_or(member);
    let known = match kind {
        "convert" => &[
            "frombase64string",
            "tobase64string",
            "toint32",
            "tostring",
            "tobyte",
        ][..],
        "text.encoding" => &[
            "getstring",
            "getbytes",
            "utf8",
            "unicode",
            "ascii",
            "default",
            "getencoding",
        ][..],
        // The console's encoding set or read (`[Console]::OutputEncoding = …UTF8`), text
        // written to it.
        "console" => &["outputencoding", "inputencoding", "writeline", "write"][..],
        "math" => &[
            "round", "floor", "ceiling", "max", "min", "abs", "pow", "sqrt", "truncate",
        ][..],
        "io.path" => &[
            "combine",
            "getfilename",
            "getextension",
            "getdirectoryname",
            "getfilenamewithoutextension",
            "changeextension",
            "isrooted",
            "join",
        ][..],
        "string" => &[
            "join",
            "isnullorempty",
            "isnullorwhitespace",
            "format",
            "concat",
        ][..],
        "datetime" => &["parse", "parseexact", "fromfiletime"][..],
        "timespan" => &["fromhours", "fromminutes", "fromseconds", "fromdays"][..],
        "guid" => &["newguid", "parse"][..],
        "uri" => &["escapedatastring", "unescapedatastring"][..],
        "bitconverter" => &["tostring"][..],
        _ => &[][..],
    };
    known.contains(&method)
}

/// Methods of strings and lists that only compute a value from the object they are
/// called on: text searched, cut or changed in case, a list counted. A call of any other
/// method may do anything (`.DownloadString(…)`, `.Invoke(…)`, `.Delete()`).
pub(super) const PURE_METHODS: &[&str] = &[
    "contains",
    "substring",
    "indexof",
    "lastindexof",
    "indexofany",
    "replace",
    "split",
    "trim",
    "trimstart",
    "trimend",
    "tolower",
    "toupper",
    "tolowerinvariant",
    "toupperinvariant",
    "startswith",
    "endswith",
    "tostring",
    "equals",
    "padleft",
    "padright",
    "compareto",
    "getlength",
    "tochararray",
    "normalize",
    "isnullorempty",
    "isnullorwhitespace",
];
