/** The portal's only stylesheet, served at /portal/assets/portal.css. */
export const PORTAL_CSS = `
:root { color-scheme: light; --fg:#1b1f23; --muted:#57606a; --line:#d0d7de; --accent:#0a58ca; --bad:#b42318; }
* { box-sizing: border-box; }
body { margin:0; font: 16px/1.5 system-ui, sans-serif; color: var(--fg); -webkit-text-size-adjust: 100%; }
header { display:flex; flex-wrap:wrap; justify-content:space-between; gap:.5rem 1.5rem; align-items:center;
  padding:.75rem 1rem; border-bottom:1px solid var(--line); }
header .brand { font-weight:700; color: var(--fg); text-decoration:none; }
header .who { color: var(--muted); overflow-wrap:anywhere; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: .5rem 0 1rem; overflow-wrap:anywhere; }
a { color: var(--accent); }
p, li { overflow-wrap:anywhere; }
.muted { color: var(--muted); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align:left; padding:.4rem .5rem; border-bottom:1px solid var(--line); }
td.size, th.size { text-align:right; font-variant-numeric: tabular-nums; white-space:nowrap; }
td.files { color: var(--muted); }
td.files.more { white-space:normal; }
td.date { font-variant-numeric: tabular-nums; }
td.name { overflow-wrap:anywhere; min-width:10rem; }
tr.folder td.name a { font-weight:600; }
.table-wrap { overflow-x:auto; }
[hidden] { display:none !important; }
:focus-visible { outline:3px solid var(--accent); outline-offset:2px; }
h2 { font-size:1.15rem; margin:2rem 0 .25rem; }
code { overflow-wrap:anywhere; }
th button.sort { margin:0; padding:0; border:0; background:none; color:inherit; font:inherit; font-weight:700;
  cursor:pointer; text-align:inherit; }
th[aria-sort=ascending] button.sort::after { content:' \\25B2' / ''; font-size:.7em; }
th[aria-sort=descending] button.sort::after { content:' \\25BC' / ''; font-size:.7em; }
.filter { display:flex; flex-wrap:wrap; gap:.25rem .75rem; align-items:center; margin:.5rem 0 1rem; }
.filter label { margin:0; }
input[type=search] { padding:.4rem .55rem; font:inherit; border:1px solid var(--line); border-radius:4px;
  width:100%; max-width:20rem; }
input[type=file] { display:block; width:100%; max-width:32rem; margin-top:.35rem; padding:.45rem; font:inherit;
  border:1px dashed var(--line); border-radius:4px; background:#fff; }
.hint { margin:.35rem 0 0; font-size:.9rem; }
progress { display:block; width:100%; max-width:32rem; height:1rem; margin-top:1rem; accent-color: var(--accent); }
ul.way-back, ul.uploaded { padding-left:1.25rem; }
ul.way-back li { margin:.35rem 0; }
label { display:block; font-weight:600; margin-top:.75rem; }
input[type=text], input[type=password], input[type=email], select { display:block; width:100%; max-width:32rem;
  padding:.55rem; font:inherit; border:1px solid var(--line); border-radius:4px; background:#fff; }
form:not(.inline) button { display:block; }
button { margin-top:1rem; padding:.6rem 1.2rem; font:inherit; border:1px solid var(--accent); border-radius:4px;
  background: var(--accent); color:#fff; cursor:pointer; }
button.secondary { background:#fff; color: var(--accent); }
form.inline { display:inline-flex; flex-wrap:wrap; gap:.5rem; align-items:center; }
form.inline button { margin-top:0; padding:.2rem .6rem; }
.error { padding:.5rem .75rem; border-left:4px solid var(--bad); background:#fff4f2; }
.notice { padding:.5rem .75rem; margin:1rem 0; border-left:4px solid var(--accent); background:#f3f7ff; }
.notice p { margin: .25rem 0; }
@media (max-width: 30rem) {
  main { padding: .75rem; }
  button[type=submit]:not(.secondary) { width:100%; }
}
`;
