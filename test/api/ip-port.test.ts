import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ipLiteral, parseIpPort, portNumber } from '../../src/api/ip-port.ts';

test('parseIpPort: IP literals with an optional port, nothing else', () => {
  assert.deepEqual(parseIpPort('10.0.0.1:6443'), { ip: '10.0.0.1', port: 6443 });
  assert.deepEqual(parseIpPort('10.0.0.1'), { ip: '10.0.0.1', port: 6443 });
  assert.deepEqual(parseIpPort('[fd00::1]:16443'), { ip: 'fd00::1', port: 16443 });
  assert.deepEqual(parseIpPort('[fd00::1]'), { ip: 'fd00::1', port: 6443 });
  assert.deepEqual(parseIpPort('fd00::1'), { ip: 'fd00::1', port: 6443 });
  assert.deepEqual(parseIpPort('::ffff:10.0.0.1'), { ip: '::ffff:10.0.0.1', port: 6443 });
  for (const bad of ['', 'cp-1:6443', 'localhost', '10.0.0.1:0', '10.0.0.1:65536', '10.0.0.1:06443', '10.0.0.1:', '10.0.0.256:6443', '[10.0.0.1]:6443',
    'fe80::1%eth0', '[fe80::1%eth0]:6443', '10.0.0.1:6443\n- --x', ' 10.0.0.1:6443', '10.0.0.1:6443/x', '[fd00::1]:6443:1', 'fd00::1]:6443', '1.2.3.4:5:6']) {
    assert.equal(parseIpPort(bad), undefined, JSON.stringify(bad));
  }
  assert.equal(ipLiteral('10.0.0.1'), '10.0.0.1');
  assert.equal(portNumber('65535'), 65535);
  assert.equal(portNumber('+1'), undefined);
});
