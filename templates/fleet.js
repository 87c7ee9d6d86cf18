/* The fleet page's VM table: every VM's row from the JSON blob in #fleet-data, filtered by the class
   cards and the search box, sorted by a header click, shown a page at a time. Rows are built with
   textContent only (names are untrusted); the page's CSP allows this one script by its hash. */
(() => {
  'use strict';
  const blob = JSON.parse(document.getElementById('fleet-data').textContent);
  const rows = blob.rows.map(values => {
    const row = {};
    blob.columns.forEach((name, i) => { row[name] = values[i]; });
    row.hay = [row.name, row.moid, row.vcenter, row.host, row.cluster].join('\n').toLowerCase();
    return row;
  });
  const state = {klass: null, query: '', key: 'rank', desc: false, page: 0};
  const $ = id => document.getElementById(id);
  const tbody = $('vm-rows'), search = $('vm-search'), info = $('page-info'), shown = $('filter-state');
  const cards = [...document.querySelectorAll('[data-class]')];
  const headers = [...document.querySelectorAll('#vm-table th[data-key]')];

  const el = (tag, text, cls) => {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  };
  const num = (value, digits) => value === null || value === undefined ? '\u2013' :
    value.toLocaleString('en-US', {minimumFractionDigits: digits, maximumFractionDigits: digits});
  const badge = severity => {
    const span = el('span', null, 'sev sev-' + (severity || 'none'));
    span.append(el('span', blob.icons[severity] || blob.icons.none, 'icon'), ' ' +
                (severity ? severity.toUpperCase() : 'NO FINDINGS'));
    span.firstChild.setAttribute('aria-hidden', 'true');
    return span;
  };

  function cell(tr, content, cls) {
    const td = el('td', null, cls);
    for (const part of [].concat(content)) td.append(part);
    tr.append(td);
    return td;
  }

  function rowElement(r) {
    const tr = el('tr');
    cell(tr, String(r.rank), 'num');
    cell(tr, badge(r.severity));
    const klass = el('span', r.class, 'cls');
    klass.style.color = klass.style.borderColor = blob.colours[r.class];
    cell(tr, r.confirmed ? [klass, el('br'), el('span', 'confirmed by host counters', 'muted')] : klass);
    let name = r.name;
    if (r.vm_href) {  // esxdiag serve: the VM's own page
      name = el('a', r.name);
      name.href = r.vm_href;
    }
    const who = [name, el('br'), el('span', r.moid + ' @ ' + r.vcenter, 'muted')];
    if (r.deep_href) {
      const link = el('a', 'deep report');
      link.href = r.deep_href;
      who.push(el('br'), link);
    }
    cell(tr, who, 'who');
    cell(tr, [r.host || '\u2013', el('br'), el('span', r.cluster || '', 'muted')]);
    cell(tr, num(r.drops_per_s, 3), 'num');
    cell(tr, num(r.drops_per_1000, 3), 'num');
    const mark = {upper: '\u2264 ', lower: '\u2265 '}[r.ready_bound] || '';
    cell(tr, mark + num(r.ready_worst_pct, 2), 'num');
    cell(tr, num(r.costop_worst_pct, 2), 'num');
    cell(tr, num(r.max_limited_worst_pct, 2), 'num');
    cell(tr, num(r.score, 1), 'num');
    const more = [].concat(r.source ? [r.source + ', ' + r.samples + ' samples'] : [], r.notes,
                           r.deep ? ['deep check: ' + r.deep] : []);
    const fold = el('details', null, 'fold');
    fold.append(el('summary', 'why, in full' + (more.length ? `, and ${more.length} note(s)` : '')));
    const list = el('ul', null, 'plain');
    for (const line of [r.reason].concat(more)) list.append(el('li', line));
    fold.append(list);
    cell(tr, [el('div', r.reason, 'reason'), fold], 'why');
    return tr;
  }

  function compare(a, b) {
    const x = a[state.key], y = b[state.key];
    if (x === y) return a.rank - b.rank;
    if (x === null || x === undefined) return 1;  // unmeasured last, either way
    if (y === null || y === undefined) return -1;
    const order = state.key === 'severity' ? blob.severities.indexOf(x) - blob.severities.indexOf(y) :
      state.key === 'class' ? blob.classes.indexOf(x) - blob.classes.indexOf(y) :
      typeof x === 'number' ? x - y : String(x).localeCompare(String(y));
    return state.desc ? -order : order;
  }

  function render() {
    const query = state.query.trim().toLowerCase();
    const matching = rows.filter(r => (!state.klass || r.class === state.klass) && (!query || r.hay.includes(query)));
    if (state.key !== 'rank' || state.desc) matching.sort(compare);
    const pages = Math.max(1, Math.ceil(matching.length / blob.page_size));
    state.page = Math.min(state.page, pages - 1);
    const start = state.page * blob.page_size;
    tbody.replaceChildren(...matching.slice(start, start + blob.page_size).map(rowElement));
    if (!matching.length) {
      const none = el('td', 'No VM matches.');
      none.colSpan = headers.length + 1;
      tbody.append(el('tr'));
      tbody.lastChild.append(none);
    }
    info.textContent = `page ${state.page + 1} of ${pages} \u00b7 VMs ${matching.length ? start + 1 : 0}\u2013` +
      `${Math.min(start + blob.page_size, matching.length)} of ${matching.length}`;
    shown.textContent = state.klass || query ? `filtered${state.klass ? ': ' + state.klass : ''}` +
      `${query ? ' \u00b7 "' + state.query.trim() + '"' : ''}` : `all ${rows.length} VMs`;
    for (const card of cards) card.setAttribute('aria-pressed', String(card.dataset.class === state.klass));
    for (const th of headers) {
      th.setAttribute('aria-sort', th.dataset.key !== state.key ? 'none' : state.desc ? 'descending' : 'ascending');
    }
  }

  for (const card of cards) {
    card.addEventListener('click', () => {
      state.klass = state.klass === card.dataset.class ? null : card.dataset.class;
      state.page = 0;
      render();
      $('all-vms').scrollIntoView();
    });
  }
  for (const th of headers) {
    th.addEventListener('click', () => {
      state.desc = state.key === th.dataset.key ? !state.desc : th.dataset.key === 'score' ||
        th.dataset.key.startsWith('drops') || th.dataset.key.endsWith('_pct');
      state.key = th.dataset.key;
      render();
    });
  }
  search.addEventListener('input', () => { state.query = search.value; state.page = 0; render(); });
  const turn = to => () => { state.page = to(state.page); render(); };
  $('page-first').addEventListener('click', turn(() => 0));
  $('page-prev').addEventListener('click', turn(p => Math.max(0, p - 1)));
  $('page-next').addEventListener('click', turn(p => p + 1));
  $('page-last').addEventListener('click', turn(() => Infinity));
  $('show-all').addEventListener('click', () => {
    Object.assign(state, {klass: null, query: '', key: 'rank', desc: false, page: 0});
    search.value = '';
    render();
  });
  document.documentElement.classList.add('scripted');
  render();
})();
