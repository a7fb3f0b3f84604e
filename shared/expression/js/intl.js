// Minimal Intl for a QuickJS without ICU: just what Luxon needs for en-US
// output and time zones (offsets come from the host's tz database through
// `tzOffset(zone, epochMs)`, which returns minutes or NaN for an unknown zone).
(function (tzOffset) {
  'use strict';
  if (typeof globalThis.Intl !== 'undefined') return;
  const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
  const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
  let defaultZone = 'UTC';

  function canonicalZone(tz) {
    if (tz === undefined) return defaultZone;
    const s = String(tz);
    const up = s.toUpperCase();
    if (up === 'UTC' || up === 'ETC/UTC' || up === 'GMT' || up === 'ETC/GMT' || up === 'Z') return 'UTC';
    if (Number.isNaN(tzOffset(s, 0))) throw new RangeError('Invalid time zone specified: ' + s);
    return s;
  }
  function offsetMinutes(tz, ts) {
    if (tz === 'UTC') return 0;
    const o = tzOffset(tz, ts);
    return Number.isNaN(o) ? 0 : o;
  }
  const pad2 = (n) => (n < 10 ? '0' : '') + n;

  function fields(date, tz) {
    const ts = +date;
    const off = offsetMinutes(tz, ts);
    const d = new Date(ts + off * 60000);
    return {
      year: d.getUTCFullYear(), month: d.getUTCMonth(), day: d.getUTCDate(), weekday: d.getUTCDay(),
      hour: d.getUTCHours(), minute: d.getUTCMinutes(), second: d.getUTCSeconds(), off,
    };
  }
  function offsetName(off) {
    if (off === 0) return 'UTC';
    const sign = off < 0 ? '-' : '+';
    const a = Math.abs(off);
    const h = Math.floor(a / 60), m = a % 60;
    return 'GMT' + sign + h + (m ? ':' + pad2(m) : '');
  }

  class DateTimeFormat {
    constructor(locales, options) {
      const o = Object.assign({}, options || {});
      this._tz = canonicalZone(o.timeZone);
      this._o = o;
      const dateless = !o.year && !o.month && !o.day && !o.weekday && !o.hour && !o.minute && !o.second && !o.timeZoneName && !o.era && !o.dateStyle && !o.timeStyle;
      if (dateless) { o.year = 'numeric'; o.month = 'numeric'; o.day = 'numeric'; }
      this._h12 = o.hour12 !== undefined ? !!o.hour12 : !(o.hourCycle === 'h23' || o.hourCycle === 'h24');
    }
    resolvedOptions() {
      return Object.assign({}, this._o, { locale: 'en-US', calendar: 'gregory', numberingSystem: 'latn', timeZone: this._tz, hourCycle: this._h12 ? 'h12' : 'h23', hour12: this._h12 });
    }
    formatToParts(date) {
      const d = date === undefined ? new Date() : new Date(+date);
      const f = fields(d, this._tz);
      const o = this._o;
      const parts = [];
      const lit = (v) => parts.push({ type: 'literal', value: v });
      const datePart = o.year || o.month || o.day || o.weekday;
      if (o.weekday) {
        parts.push({ type: 'weekday', value: o.weekday === 'long' ? DAYS[f.weekday] : DAYS[f.weekday].slice(0, 3) });
        if (o.year || o.month || o.day) lit(', ');
      }
      if (o.month === 'long' || o.month === 'short' || o.month === 'narrow') {
        const m = MONTHS[f.month];
        parts.push({ type: 'month', value: o.month === 'long' ? m : o.month === 'short' ? m.slice(0, 3) : m[0] });
        if (o.day) { lit(' '); parts.push({ type: 'day', value: o.day === '2-digit' ? pad2(f.day) : String(f.day) }); }
        if (o.year) { lit(o.day ? ', ' : ' '); parts.push({ type: 'year', value: String(f.year) }); }
      } else if (o.month || o.day || o.year) {
        const seq = [];
        if (o.month) seq.push({ type: 'month', value: o.month === '2-digit' ? pad2(f.month + 1) : String(f.month + 1) });
        if (o.day) seq.push({ type: 'day', value: o.day === '2-digit' ? pad2(f.day) : String(f.day) });
        if (o.year) seq.push({ type: 'year', value: o.year === '2-digit' ? pad2(f.year % 100) : String(f.year) });
        seq.forEach((p, i) => { if (i) lit('/'); parts.push(p); });
      }
      if (o.era) { lit(' '); parts.push({ type: 'era', value: f.year > 0 ? 'AD' : 'BC' }); }
      if (o.hour || o.minute || o.second) {
        if (datePart) lit(', ');
        let h = f.hour;
        if (this._h12) h = h % 12 === 0 ? 12 : h % 12;
        const seq = [];
        if (o.hour) seq.push({ type: 'hour', value: o.hour === '2-digit' || !this._h12 ? pad2(h) : String(h) });
        if (o.minute) seq.push({ type: 'minute', value: pad2(f.minute) });
        if (o.second) seq.push({ type: 'second', value: pad2(f.second) });
        seq.forEach((p, i) => { if (i) lit(':'); parts.push(p); });
        if (this._h12 && o.hour) { lit(' '); parts.push({ type: 'dayPeriod', value: f.hour < 12 ? 'AM' : 'PM' }); }
      }
      if (o.timeZoneName) { lit(' '); parts.push({ type: 'timeZoneName', value: o.timeZoneName === 'long' && this._tz === 'UTC' ? 'Coordinated Universal Time' : offsetName(f.off) }); }
      return parts;
    }
    format(date) {
      return this.formatToParts(date).map((p) => p.value).join('');
    }
    static supportedLocalesOf(l) { return Array.isArray(l) ? l : l ? [l] : []; }
  }

  function group(intStr) {
    return intStr.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  class NumberFormat {
    constructor(locales, options) { this._o = Object.assign({}, options || {}); }
    resolvedOptions() { return Object.assign({ locale: 'en-US', numberingSystem: 'latn', style: 'decimal' }, this._o); }
    format(n) {
      const o = this._o;
      let x = Number(n);
      if (Number.isNaN(x)) return 'NaN';
      const style = o.style || 'decimal';
      if (style === 'percent') x *= 100;
      const isCur = style === 'currency';
      const minF = o.minimumFractionDigits !== undefined ? o.minimumFractionDigits : isCur ? 2 : 0;
      const maxF = Math.max(minF, o.maximumFractionDigits !== undefined ? o.maximumFractionDigits : isCur ? 2 : style === 'percent' ? 0 : 3);
      const neg = x < 0;
      if (!Number.isFinite(x)) return (neg ? '-' : '') + '∞';
      let s = Math.abs(x).toFixed(maxF);
      if (s.indexOf('.') >= 0) {
        let [i, f] = s.split('.');
        while (f.length > minF && f.endsWith('0')) f = f.slice(0, -1);
        s = f.length ? i + '.' + f : i;
      }
      let [ip, fp] = s.split('.');
      if (o.minimumIntegerDigits) ip = ip.padStart(o.minimumIntegerDigits, '0');
      if (o.useGrouping !== false) ip = group(ip);
      s = fp !== undefined ? ip + '.' + fp : ip;
      if (isCur) {
        const sym = { USD: '$', EUR: '€', GBP: '£', JPY: '¥', INR: '₹' }[String(o.currency).toUpperCase()];
        s = (sym || String(o.currency).toUpperCase() + '\u00a0') + s;
      }
      if (style === 'percent') s += '%';
      return (neg && x !== 0 ? '-' : '') + s;
    }
    formatToParts(n) { return [{ type: 'literal', value: this.format(n) }]; }
    static supportedLocalesOf(l) { return Array.isArray(l) ? l : l ? [l] : []; }
  }

  globalThis.Intl = {
    DateTimeFormat,
    NumberFormat,
    getCanonicalLocales: (l) => (Array.isArray(l) ? l : l ? [l] : []),
    __setDefaultZone(z) { defaultZone = canonicalZone(z); },
  };
})
