//! The read-only classifier of `bash` commands, against commands that read
//! and adversarial ones that must not be taken for reads.

use gyre_tools::is_read_only_command;

#[track_caller]
fn reads(command: &str) {
    assert!(
        is_read_only_command(command),
        "should be read-only: {command}"
    );
}

#[track_caller]
fn writes(command: &str) {
    assert!(
        !is_read_only_command(command),
        "should not be read-only: {command}"
    );
}

#[test]
fn plain_readers_are_read_only() {
    for command in [
        "ls",
        "ls -la src",
        "cat Cargo.toml",
        "head -n 20 src/lib.rs && tail -5 src/lib.rs",
        "wc -l src/*.rs",
        "pwd",
        "echo hello world",
        "grep -rn 'fn main' .",
        "rg -n \"TODO|FIXME\" crates",
        "cat a.txt | grep foo | sort | uniq -c | sort -rn | head",
        "find . -name '*.rs' -type f",
        "find src -maxdepth 2 -newer Cargo.toml -print",
        "diff a.txt b.txt; echo done",
        "du -sh target || df -h",
        "stat -c %s file",
        "tree -L 2",
        "file README.md",
        "which cargo\nwhich rustc",
    ] {
        reads(command);
    }
}

#[test]
fn git_readers_are_read_only() {
    for command in [
        "git status",
        "git status --short",
        "git log --oneline -n 5",
        "git log --format='%H %s' -- src",
        "git diff HEAD~1 -- src/lib.rs",
        "git diff --stat",
        "git show HEAD:Cargo.toml",
        "git -C sub status",
        "git --no-pager log -1",
        "git rev-parse --show-toplevel",
        "git ls-files",
        "git blame -L 10,20 src/lib.rs",
        "git branch",
        "git branch -a -vv",
        "git branch --show-current",
        "git branch --list 'feat/*'",
        "git branch --sort=-committerdate",
    ] {
        reads(command);
    }
}

#[test]
fn quoting_and_comments_are_understood() {
    reads("grep 'a;b' file");
    reads("grep \"a && b\" file");
    reads("grep a\\;b file");
    reads("echo 'rm -rf x' # ; rm -rf x");
    reads("echo \"cost: 5$\"");
    reads("grep -E 'x$' file");
    reads("l's' -a");
    reads("ls \\\n -la");
    reads("ls;");
    // Not a comment: `#` inside a word; the `;` then starts `rm`.
    writes("echo a#; rm x");
}

#[test]
fn harmless_redirections_are_allowed() {
    reads("find . -name x 2>/dev/null");
    reads("ls >/dev/null");
    reads("ls > /dev/null 2>&1");
    reads("git status 2>&1 | head");
    reads("ls >>/dev/null");
}

#[test]
fn chained_writers_are_caught() {
    for command in [
        "ls; rm -rf x",
        "ls && rm x",
        "ls || rm x",
        "ls\nrm x",
        "grep x | xargs rm",
        "ls | tee out",
        "ls | sh",
        "cat a | bash",
        "ls |& tee log",
    ] {
        writes(command);
    }
}

#[test]
fn redirections_that_write_are_caught() {
    for command in [
        "cat a > b",
        "cat a >> b",
        "cat a >| b",
        "cat a &> b",
        "cat a 2> err",
        "ls 3>/dev/null",
        "ls >/dev/nullx",
        "ls >'/dev/null'",
        "ls 2>&3",
        "ls >&file",
        "echo a>b",
        "cat < in",
        "cat <<EOF\nx\nEOF",
        "cat <(rm x)",
        "ls >(rm x)",
        "ls 2>/dev/null>x",
        "cat <<< text",
        "\\2>x ls",
    ] {
        writes(command);
    }
}

#[test]
fn substitutions_and_expansions_are_caught() {
    for command in [
        "echo $(rm x)",
        "echo \"$(rm x)\"",
        "echo `rm x`",
        "echo \"`rm x`\"",
        "ls $HOME",
        "ls ${dir}",
        "ls \"$dir\"",
        "ls $'\\x2f'",
        "find . -name x{,}",
        "echo {a,b}",
        "echo $((1+1))",
        "ls$IFS-la",
        "ls a#b > x",
    ] {
        writes(command);
    }
}

#[test]
fn shell_syntax_that_runs_code_is_caught() {
    for command in [
        "ls & rm x",
        "sleep 1 &",
        "X=1 ls",
        "(rm x)",
        "{ rm x; }",
        "echo 'unterminated",
        "echo \"unterminated",
        "ls \\",
        "if true; then rm x; fi",
        "for f in *; do rm $f; done",
        "! ls",
        "\\rm x",
        "'rm' x",
        "/bin/rm x",
        "/bin/ls",
        "*",
        "",
        "   ",
    ] {
        writes(command);
    }
}

#[test]
fn dangerous_options_of_known_programs_are_caught() {
    for command in [
        "find . -delete",
        "find . -name '*.tmp' -exec rm {} \\;",
        "find . -execdir rm {} +",
        "find . -ok rm {} \\;",
        "find . -fprint out",
        "find . -fls out",
        "find . -name *",
        "git branch -D x",
        "git branch -d x",
        "git branch new-branch",
        "git branch -m a b",
        "git branch --set-upstream-to=origin/main",
        "git -c core.pager=rm log",
        "git log --output=x",
        "git diff --out=x",
        "git diff --ext-diff",
        "git log *",
        "git commit -m x",
        "git checkout .",
        "git push",
        "git",
        "sort -o out in",
        "sort -uo out in",
        "sort --output=out in",
        "sort --out=out in",
        "sort --compress-program=sh in",
        "uniq in out",
        "rg --pre rm x",
        "rg --pre=./evil x",
        "tree -o out",
        "tree -R -H .",
        "file -C -m magic",
        "sed -i s/a/b/ f",
        "awk '{print}' f",
        "xargs rm",
        "env rm x",
        "timeout 5 rm x",
        "cd sub",
    ] {
        writes(command);
    }
}
