/** The portal's only stylesheet, served at /portal/assets/portal.css. */
export const PORTAL_CSS = `
:root { color-scheme: light; --fg:#1b1f23; --muted:#57606a; --line:#d0d7de; --accent:#0a58ca; --bad:#b42318; }
* { box-sizing: border-box; }
body { margin:0; font: 16px/1.5 system-ui, sans-serif; color: var(--fg); }
header { display:flex; flex-wrap:wrap; justify-content:space-between; gap:.5rem 1.5rem; align-items:center;
  padding:.75rem 1rem; border-bottom:1px solid var(--line); }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
a { color: var(--accent); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align:left; padding:.4rem .5rem; border-bottom:1px solid var(--line); }
td.size, th.size { text-align:right; font-variant-numeric: tabular-nums; }
.table-wrap { overflow-x:auto; }
label { display:block; font-weight:600; margin-top:.75rem; }
input[type=text], input[type=password], input[type=email], select { width:100%; max-width:32rem; padding:.45rem;
  font:inherit; border:1px solid var(--line); border-radius:4px; }
button { margin-top:1rem; padding:.5rem 1rem; font:inherit; border:1px solid var(--accent); border-radius:4px;
  background: var(--accent); color:#fff; cursor:pointer; }
button.secondary { background:#fff; color: var(--accent); }
form.inline { display:inline; }
form.inline button { margin-top:0; padding:.2rem .6rem; }
.error { padding:.5rem .75rem; border-left:4px solid var(--bad); background:#fff4f2; }
.notice { padding:.5rem .75rem; border-left:4px solid var(--accent); background:#f3f7ff; }
`;
