import { describe, expect, it } from 'vitest';
import { addressGroup } from '../../src/http/addressGroup.js';

describe('the address a per-address connection cap counts under', () => {
  it('is an IPv4 address itself, also when written IPv4-mapped', () => {
    expect(addressGroup('203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('is the /64 of an IPv6 address, however it is written', () => {
    const group = '2001:db8:85a3:8d3::/64';
    expect(addressGroup('2001:db8:85a3:8d3:1319:8a2e:370:7348')).toBe(group);
    expect(addressGroup('2001:0db8:85a3:08d3::1')).toBe(group);
    expect(addressGroup('2001:db8:85a3:8d3:ffff:ffff:ffff:ffff')).toBe(group);
    expect(addressGroup('2001:DB8:85A3:8D3::2%eth0')).toBe(group);
    expect(addressGroup('2001:db8:85a3:8d4::1')).not.toBe(group);
  });

  it('reads compressed zeros anywhere, and an embedded IPv4 tail', () => {
    expect(addressGroup('::1')).toBe('0:0:0:0::/64');
    expect(addressGroup('2001:db8::')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('fe80::1:2:3:4')).toBe('fe80:0:0:0::/64');
    expect(addressGroup('64:ff9b::192.0.2.33')).toBe('64:ff9b:0:0::/64');
  });

  it('is empty for a connection whose peer is unknown (already closed)', () => {
    expect(addressGroup(undefined)).toBe('');
  });
});
