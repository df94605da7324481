/**
 * The interactive API page: static HTML, one inline style and one inline script, no external
 * asset. The script reads openapi.json and builds every form itself, with textContent only
 * (nothing from the document or from an answer is parsed as HTML).
 */
export const DOCS_STYLE =
  String.raw`
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { background: #1d2330; color: #fff; padding: 12px 20px; position: sticky; top: 0; z-index: 1; }
header h1 { font-size: 18px; margin: 0 0 8px; }
header a { color: #9cc3ff; }
header label { margin-right: 12px; }
header input { font: inherit; padding: 3px 6px; }
main { padding: 12px 20px; max-width: 1100px; }
h2 { font-size: 15px; margin: 20px 0 6px; text-transform: uppercase; color: #566; }
details { background: #fff; border: 1px solid #d8dce3; border-radius: 4px; margin: 4px 0; }
summary { cursor: pointer; padding: 6px 10px; }
.m { display: inline-block; width: 64px; font-weight: 600; font-family: ui-monospace, monospace; }
.GET { color: #0a6b2f; } .POST { color: #8a5a00; } .PUT { color: #1450a3; } .DELETE { color: #a31414; }
.p { font-family: ui-monospace, monospace; }
.tag { float: right; color: #667; font-size: 12px; }
.body { padding: 6px 12px 12px; border-top: 1px solid #eee; }
.row { margin: 4px 0; }
.row label { display: inline-block; min-width: 160px; font-family: ui-monospace, monospace; }
.row small { color: #667; margin-left: 6px; }
textarea { width: 100%; min-height: 90px; font-family: ui-monospace, monospace; }
pre { background: #f0f2f5; padding: 8px; overflow: auto; max-height: 400px; ` +
  `white-space: pre-wrap; word-break: break-all; }
.codes { color: #556; font-size: 12px; }
`;

export const DOCS_SCRIPT =
  String.raw`
(function () {
  'use strict';
  var doc = null;
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]);
    });
    (kids || []).forEach(function (k) { if (k) e.appendChild(k); });
    return e;
  }
  function resolve(o) {
    for (var i = 0; o && o.$ref && i < 10; i++) {
      o = o.$ref.replace(/^#\//, '').split('/').reduce(function (a, p) { return a && a[p]; }, doc);
    }
    return o || {};
  }
  function authorization() {
    var user = document.getElementById('user').value;
    if (!user) return null;
    var bytes = new TextEncoder().encode(user + ':' + document.getElementById('secret').value);
    var bin = '';
    bytes.forEach(function (b) { bin += String.fromCharCode(b); });
    return 'Basic ' + btoa(bin);
  }
  function input(name, schema) {
    schema = resolve(schema);
    if (schema.enum || schema.type === 'boolean') {
      var options = [''].concat(schema.enum || ['true', 'false']);
      return el('select', { name: name }, options.map(function (v) { return el('option', { value: v, text: v }); }));
    }
    return el('input', { name: name, placeholder: schema.type || 'string', size: '40' });
  }
  function row(name, schema, required, hint) {
    var field = input(name, schema);
    return { name: name, field: field, node: el('div', { class: 'row' }, [
      el('label', { text: name + (required ? ' *' : '') }), field, hint ? el('small', { text: hint }) : null,
    ]) };
  }
  function operation(path, method, op) {
    var params = (op.parameters || []).map(function (p) {
      p = resolve(p);
      var r = row(p.name, p.schema, p.required, p.description);
      r.where = p.in;
      return r;
    });
    var content = op.requestBody ? resolve(op.requestBody).content || {} : {};
    var form = content['application/x-www-form-urlencoded'];
    var formRows = form ? Object.keys(resolve(form.schema).properties || {}).map(function (name) {
      var s = resolve(form.schema);
      var r = row(name, s.properties[name], (s.required || []).indexOf(name) >= 0, s.properties[name].description);
      r.where = 'form';
      return r;
    }) : [];
    var json = content['application/json'] ? el('textarea', { placeholder: 'JSON body' }) : null;
    var out = el('pre', { text: '' });
    var curl = el('pre', { text: '' });
    var button = el('button', { type: 'button', text: 'Send' });
    var codes = Object.keys(op.responses || {}).map(function (code) { ` +
  `return code + ' ' + (resolve(op.responses[code]).description || ''); });
    button.addEventListener('click', function () {
      // The document's first server is the mount this page was served from (the root or the base path).
      var server = (doc.servers && doc.servers[0] && doc.servers[0].url) || '/';
      var url = (server === '/' ? '' : server) + path;
      var query = new URLSearchParams();
      var formData = new URLSearchParams();
      params.concat(formRows).forEach(function (r) {
        var v = r.field.value;
        if (r.where === 'path') url = url.replace('{' + r.name + '}', encodeURIComponent(v));
        else if (v !== '' && r.where === 'form') formData.append(r.name, v);
        else if (v !== '') query.append(r.name, v);
      });
      if (String(query)) url += '?' + query;
      var headers = {};
      var auth = authorization();
      if (auth) headers.authorization = auth;
      var body;
      if (json && json.value.trim() !== '') { headers['content-type'] = 'application/json'; body = json.value; }
      if (form) { headers['content-type'] = 'application/x-www-form-urlencoded'; body = String(formData); }
      var user = document.getElementById('user').value;
      curl.textContent = 'curl' + (user ? ' -u "' + user + ':$ECPDS_SECRET"' : '') + ' -X ' + ` +
  `method.toUpperCase() + " '" + new URL(url, location.href) + "'" +
        (body !== undefined ? " -H 'content-type: " + headers['content-type'] + ` +
  String.raw`"' --data '" + body.replace(/'/g, "'\\''") + "'" : '');
      out.textContent = '...';
      fetch(url, { method: method.toUpperCase(), headers: headers, body: body, ` +
  `credentials: 'omit' }).then(function (res) {
        return res.text().then(function (text) {
          var shown = text;
          try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* plain text answer */ }
          out.textContent = res.status + ' ' + res.statusText + '   x-request-id: ' + ` +
  String.raw`(res.headers.get('x-request-id') || '-') + '\n\n' + shown;
        });
      }).catch(function (e) { out.textContent = 'Request failed: ' + e; });
    });
    var security = op.security || doc.security || [];
    var needs = security.length === 0 ? 'no credentials' : (op.tags || []).join(', ');
    return el('details', { 'data-search': (method + ' ' + path + ' ' + op.summary + ' ' + ` +
  `op.operationId + ' ' + needs).toLowerCase() }, [
      el('summary', {}, [el('span', { class: 'm ' + method.toUpperCase(), text: method.toUpperCase() }), ` +
  `el('span', { class: 'p', text: path + '  ' }),
        el('span', { text: op.summary || '' }), el('span', { class: 'tag', text: needs })]),
      el('div', { class: 'body' }, [
        op.description ? el('p', { text: op.description }) : null,
      ].concat(params.map(function (r) { return r.node; }), formRows.map(function (r) { return r.node; }), [
        json, el('div', { class: 'row' }, [button]), curl, out, ` +
  String.raw`el('div', { class: 'codes', text: 'Answers: ' + codes.join(' | ') }),
      ])),
    ]);
  }
  function render() {
    var main = document.getElementById('ops');
    main.textContent = '';
    document.getElementById('version').textContent = doc.info.title + ' ' + doc.info.version;
    var groups = {};
    Object.keys(doc.paths).forEach(function (path) {
      var group = path.split('/')[path.indexOf('/v1/') === 0 ? 2 : 1] || 'other';
      if (path.indexOf('/v1/') !== 0) group = 'operations';
      Object.keys(doc.paths[path]).forEach(function (method) {
        (groups[group] = groups[group] || []).push(operation(path, method, doc.paths[path][method]));
      });
    });
    Object.keys(groups).forEach(function (g) {
      main.appendChild(el('h2', { text: g }));
      groups[g].forEach(function (n) { main.appendChild(n); });
    });
  }
  document.getElementById('filter').addEventListener('input', function (e) {
    var words = e.target.value.toLowerCase().split(/\s+/).filter(Boolean);
    document.querySelectorAll('details').forEach(function (d) {
      var text = d.getAttribute('data-search');
      d.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
    });
  });
  fetch('openapi.json').then(function (r) { return r.json(); }).then(function (d) { doc = d; render(); })
    .catch(function (e) { document.getElementById('ops').textContent = 'Could not load openapi.json: ' + e; });
})();
`;

export const docsHtml = (title: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${DOCS_STYLE}</style>
</head>
<body>
<header>
<h1 id="version">${title}</h1>
<div id="credentials">
<label>Username <input id="user" autocomplete="off" spellcheck="false"></label>
<label>Secret <input id="secret" type="password" autocomplete="off"></label>
<label><input id="filter" type="search" placeholder="filter operations"></label>
<a href="openapi.json">openapi.json</a>
<a href="docs/guide">Guides</a>
</div>
<small>Credentials stay in this page (never stored) and go only to this server, as HTTP Basic.</small>
</header>
<main id="ops"><p>Loading the API description...</p></main>
<script>${DOCS_SCRIPT}</script>
</body>
</html>
`;
