import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ipLiteral, isKubernetesIP, parseIpPort, portNumber } from '../../src/api/ip-port.ts';

test('parseIpPort: IP literals with an optional port, nothing else', () => {
  assert.deepEqual(parseIpPort('10.0.0.1:6443'), { ip: '10.0.0.1', port: 6443 });
  assert.deepEqual(parseIpPort('10.0.0.1'), { ip: '10.0.0.1', port: 6443 });
  assert.deepEqual(parseIpPort('[fd00::1]:16443'), { ip: 'fd00::1', port: 16443 });
  assert.deepEqual(parseIpPort('[fd00::1]'), { ip: 'fd00::1', port: 6443 });
  assert.deepEqual(parseIpPort('fd00::1'), { ip: 'fd00::1', port: 6443 });
  // An IPv4-mapped IPv6 address is refused as Kubernetes' isIP() refuses it (the admission policy checks PEER_IP so).
  for (const bad of ['::ffff:10.0.0.1', '[::ffff:10.0.0.1]:6443', '[0:0:0:0:0:ffff:a00:1]:6443', '', 'cp-1:6443', 'localhost', '10.0.0.1:0', '10.0.0.1:65536', '10.0.0.1:06443', '10.0.0.1:', '10.0.0.256:6443', '[10.0.0.1]:6443',
    'fe80::1%eth0', '[fe80::1%eth0]:6443', '10.0.0.1:6443\n- --x', ' 10.0.0.1:6443', '10.0.0.1:6443/x', '[fd00::1]:6443:1', 'fd00::1]:6443', '1.2.3.4:5:6']) {
    assert.equal(parseIpPort(bad), undefined, JSON.stringify(bad));
  }
  assert.equal(ipLiteral('10.0.0.1'), '10.0.0.1');
  assert.equal(portNumber('65535'), 65535);
  assert.equal(portNumber('+1'), undefined);
});

test('isKubernetesIP: IPv4 and IPv6 as CEL isIP() takes them, no zone, no IPv4-mapped IPv6', () => {
  for (const ok of ['10.0.0.1', '0.0.0.0', 'fd00::1', '::1', '::', '1:2:3:4:5:6:7:8', '::ffff:0:10.0.0.1', '64:ff9b::10.0.0.1', '::10.0.0.1', 'ffff::1']) {
    assert.equal(isKubernetesIP(ok), true, ok);
  }
  for (const bad of ['::ffff:10.0.0.1', '::FFFF:a00:1', '0:0:0:0:0:ffff:10.0.0.1', 'fe80::1%eth0', '00.0.0.1', '256.0.0.1', '1.2.3', '', 'x', '1::2::3']) {
    assert.equal(isKubernetesIP(bad), false, bad);
  }
});
