/* gpucost report page: what scripts add to the server-rendered tables (filters, sorting, "show more") and the
   charts (uPlot). Data reach the script only as JSON blocks and data-* attributes, and are shown only through
   textContent: nothing from data is ever parsed as markup. */
(function () {
  "use strict";
  var ROWS_SHOWN = 25;          // rows per table before "show more"
  var form = document.getElementById("filters");
  var tables = Array.prototype.slice.call(document.querySelectorAll("table.offers"));

  function num(value) { return value === "" || value == null ? null : Number(value); }

  function wanted() {
    var f = {};
    ["workload", "gpu", "provider", "region", "pricing"].forEach(function (k) { f[k] = form.elements[k].value; });
    ["hours", "usd", "co2"].forEach(function (k) {
      var v = form.elements[k].value.trim();
      f[k] = v === "" ? null : Number(v);
    });
    return f;
  }

  // The same tests as `gpucost offers`: names whole, bounds inclusive, an offer without CO2e data fails a CO2e bound.
  function matches(row, f) {
    var d = row.dataset;
    if (f.gpu && d.gpu !== f.gpu) return false;
    if (f.provider && d.provider !== f.provider) return false;
    if (f.region && d.region !== f.region) return false;
    if (f.pricing && d.pricing !== f.pricing) return false;
    var limits = [["hours", f.hours], ["usd", f.usd], ["co2", f.co2]];
    for (var i = 0; i < limits.length; i++) {
      var bound = limits[i][1];
      if (bound == null || isNaN(bound)) continue;
      var value = num(d[limits[i][0]]);
      if (value == null || value > bound) return false;
    }
    return true;
  }

  function show(table) {
    var f = wanted(), shown = 0, matched = 0;
    var limit = table._limit || ROWS_SHOWN;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      if (!row.dataset.gpu) return;  // the "no ranked offer" row
      var ok = matches(row, f);
      if (ok) matched++;
      row.hidden = !(ok && shown < limit);
      if (ok && shown < limit) shown++;
    });
    var more = table._more;
    more.hidden = matched <= shown;
    more.textContent = "show " + Math.min(ROWS_SHOWN, matched - shown) + " more (" + (matched - shown) + " hidden)";
    return matched;
  }

  function apply() {
    var f = wanted(), total = 0;
    Array.prototype.forEach.call(document.querySelectorAll("section.workload"), function (section) {
      section.hidden = !!f.workload && section.dataset.workload !== f.workload;
    });
    tables.forEach(function (table) {
      var n = show(table);
      if (!table.closest("section").hidden && table.dataset.sort === "cost") total += n;
    });
    form.elements.summary.value = total + " offer row(s) match among the rows of this page (by cost)";
  }

  function sortBy(table, key, th) {
    var descending = th.getAttribute("aria-sort") === "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).filter(function (r) { return r.dataset.gpu; });
    rows.forEach(function (r, i) { if (r._order == null) r._order = i; });
    rows.sort(function (a, b) {
      var x = num(a.dataset[key]), y = num(b.dataset[key]);
      if (x == null && y == null) return a._order - b._order;
      if (x == null) return 1;                 // no value: last, either way
      if (y == null) return -1;
      return (descending ? y - x : x - y) || a._order - b._order;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    show(table);
  }

  if (form) {
    form.hidden = false;
    tables.forEach(function (table) {
      var more = document.createElement("button");
      more.type = "button";
      more.className = "more";
      more.addEventListener("click", function () { table._limit = (table._limit || ROWS_SHOWN) + ROWS_SHOWN; show(table); });
      table.parentNode.parentNode.insertBefore(more, table.parentNode.nextSibling);
      table._more = more;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
        var key = th.dataset.key;
        if (!key) return;
        var button = document.createElement("button");
        button.type = "button";
        button.textContent = th.textContent;
        button.title = "sort by " + th.textContent;
        th.textContent = "";
        th.appendChild(button);
        button.addEventListener("click", function () { sortBy(table, key, th); });
      });
    });
    form.addEventListener("input", apply);
    form.addEventListener("change", apply);
    form.addEventListener("reset", function () { setTimeout(apply, 0); });
    apply();
  }

  function readJson(id) { return JSON.parse(document.getElementById(id).textContent); }

  function size(el) {
    var width = Math.max(280, el.clientWidth);
    return { width: width, height: Math.round(Math.min(380, Math.max(300, width * 0.5))) };
  }

  var charts = [];

  // $/Mtoken against hours, log scales: the offers as points, the Pareto front joined, each interval a bar.
  function offersChart(el, data) {
    var n = data.hours.length, cloud = new Array(n), front = new Array(n);
    var lo = Infinity, hi = 0;
    for (var i = 0; i < n; i++) {
      cloud[i] = data.front[i] ? null : data.mtok[i];
      front[i] = data.front[i] ? data.mtok[i] : null;
      lo = Math.min(lo, data.low[i]);
      hi = Math.max(hi, data.high[i]);
    }
    var tip = document.createElement("div");
    tip.className = "tip";
    el.appendChild(tip);
    var options = Object.assign(size(el), {
      legend: { live: false },
      cursor: { points: { show: false }, drag: { x: false, y: false } },
      scales: { x: { time: false, distr: 3 }, y: { distr: 3, range: function () { return [lo / 1.15, hi * 1.15]; } } },
      axes: [{ label: "hours to finish (expected)" }, { label: "USD per million tokens", size: 60 }],
      series: [
        {},
        { label: "offers", stroke: "rgba(31,95,191,0.75)", fill: "rgba(31,95,191,0.35)", paths: function () { return null; },
          points: { show: true, size: 4, width: 1 } },
        { label: "Pareto front", stroke: "#b3123c", width: 1.5, spanGaps: true, points: { show: true, size: 6 } },
      ],
      hooks: {
        draw: [function (u) {   // each offer's 80% interval: a vertical bar from its low to its high $/Mtoken
          var ctx = u.ctx;
          ctx.save();
          ctx.beginPath();
          ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
          ctx.clip();
          [[false, "rgba(31,95,191,0.18)"], [true, "rgba(179,18,60,0.8)"]].forEach(function (kind) {
            ctx.strokeStyle = kind[1];
            ctx.lineWidth = kind[0] ? 1.5 : 1;
            ctx.beginPath();
            for (var j = 0; j < n; j++) {
              if (data.front[j] !== kind[0]) continue;
              var x = u.valToPos(data.hours[j], "x", true);
              ctx.moveTo(x, u.valToPos(data.low[j], "y", true));
              ctx.lineTo(x, u.valToPos(data.high[j], "y", true));
            }
            ctx.stroke();
          });
          ctx.restore();
        }],
        setCursor: [function (u) {   // name the offer nearest the pointer (within 12 px)
          var left = u.cursor.left, top = u.cursor.top, best = -1, bestD = 144;
          if (left == null || left < 0) { tip.style.display = "none"; return; }
          for (var j = 0; j < n; j++) {
            var dx = u.valToPos(data.hours[j], "x") - left, dy = u.valToPos(data.mtok[j], "y") - top;
            var d = dx * dx + dy * dy;
            if (d < bestD) { bestD = d; best = j; }
          }
          if (best < 0) { tip.style.display = "none"; return; }
          tip.textContent = (data.front[best] ? "Pareto front: " : "") + data.label[best];
          tip.style.display = "block";
          var over = u.over.getBoundingClientRect(), box = el.getBoundingClientRect();
          var x = over.left - box.left + u.valToPos(data.hours[best], "x");
          var y = over.top - box.top + u.valToPos(data.mtok[best], "y");
          tip.style.left = Math.max(0, Math.min(x + 8, el.clientWidth - tip.offsetWidth)) + "px";
          tip.style.top = Math.max(0, y - tip.offsetHeight - 8) + "px";
        }],
      },
    });
    charts.push([el, new uPlot(options, [data.hours, cloud, front], el)]);
  }

  var PALETTE = ["#1f5fbf", "#b3123c", "#2e8b57", "#b8860b", "#6a3d9a", "#555"];

  // The lowest USD per GPU-hour per day observed, one line per pricing.
  function historyChart(el, data) {
    var names = Object.keys(data.series);
    var options = Object.assign(size(el), {
      scales: { x: { time: true } },
      axes: [{}, { label: "USD per GPU-hour", size: 60 }],
      series: [{}].concat(names.map(function (name, i) {
        return { label: name, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: true, points: { show: true, size: 4 } };
      })),
    });
    options.height = Math.min(options.height, 260);
    charts.push([el, new uPlot(options, [data.days].concat(names.map(function (k) { return data.series[k]; })), el)]);
  }

  if (typeof uPlot === "function") {
    Array.prototype.forEach.call(document.querySelectorAll("[data-chart]"), function (el) {
      offersChart(el, readJson(el.dataset.chart));
    });
    Array.prototype.forEach.call(document.querySelectorAll("[data-history]"), function (el) {
      historyChart(el, readJson(el.dataset.history));
    });
    var pending = null;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(function () {
        charts.forEach(function (c) { var s = size(c[0]); c[1].setSize({ width: s.width, height: c[1].height }); });
      }, 150);
    });
  }
})();
