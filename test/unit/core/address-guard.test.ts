import fc from 'fast-check';
import { checkUrl, isBlockedAddress, isMetadataAddress } from '../../../functions/core/address-guard';

const STRICT = { allowPrivate: false };
const LOCAL = { allowPrivate: true };

describe('isBlockedAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback /8'],
    ['::1', 'IPv6 loopback'],
    ['10.1.2.3', 'private 10/8'],
    ['172.16.0.1', 'private 172.16/12'],
    ['172.31.255.255', 'private 172.16/12 top'],
    ['192.168.1.1', 'private 192.168/16'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.0.1', 'link-local'],
    ['fe80::1', 'IPv6 link-local'],
    ['febf::1', 'IPv6 link-local top of fe80::/10'],
    ['fe80::1%eth0', 'scoped link-local'],
    ['fc00::1', 'unique-local'],
    ['fd00:ec2::254', 'EC2 IPv6 metadata'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.254', 'CGNAT top'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network 0/8'],
    ['::', 'IPv6 unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast SSDP'],
    ['ff02::1', 'IPv6 multicast'],
    ['240.0.0.1', 'reserved 240/4'],
    ['198.18.0.1', 'benchmarking'],
    ['192.0.2.1', 'documentation TEST-NET-1'],
    ['198.51.100.7', 'documentation TEST-NET-2'],
    ['203.0.113.9', 'documentation TEST-NET-3'],
    ['2001:db8::1', 'IPv6 documentation'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata, hex form'],
    ['::ffff:0:7f00:1', 'SIIT-translated loopback'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::a00:1', 'IPv4-compatible private, hex form'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['64:ff9b::10.0.0.1', 'NAT64 of private'],
    ['64:ff9b:1::5db8:d822', 'local-use NAT64'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2002:a9fe:a9fe::1', '6to4 of metadata'],
    ['2001::1', 'Teredo'],
    ['4000::1', 'outside global unicast 2000::/3'],
    ['127.1', 'short IPv4 form'],
    ['0177.0.0.1', 'octal IPv4 form'],
    ['010.0.0.1', 'leading zero'],
    ['0x7f000001', 'hex IPv4 form'],
    ['2130706433', 'integer IPv4 form'],
    ['::ffff:0177.0.0.1', 'IPv4-mapped with octal tail'],
    ['256.1.1.1', 'out of range'],
    ['example.com', 'a name'],
    ['', 'empty'],
    ['::g', 'garbage'],
  ])('blocks %s (%s)', (ip) => {
    // Act
    const blocked = isBlockedAddress(ip);

    // Assess
    expect(blocked).toBe(true);
  });

  it.each([
    ['93.184.216.34'],
    ['8.8.8.8'],
    ['1.1.1.1'],
    ['172.32.0.1'],
    ['100.128.0.1'],
    ['2606:4700::1111'],
    ['2a00:1450:4001:80b::200e'],
    ['::ffff:93.184.216.34'],
    ['64:ff9b::5db8:d822'],
    ['2002:5db8:d822::1'],
  ])('lets public %s through', (ip) => {
    // Act
    const blocked = isBlockedAddress(ip);

    // Assess
    expect(blocked).toBe(false);
  });
});

describe('checkUrl', () => {
  it.each([
    ['http://127.1/', 'address 127.0.0.1 is not allowed'],
    ['http://0x7f000001/', 'address 127.0.0.1 is not allowed'],
    ['http://0x7f.1/', 'address 127.0.0.1 is not allowed'],
    ['http://2130706433/', 'address 127.0.0.1 is not allowed'],
    ['http://0177.0.0.1/', 'address 127.0.0.1 is not allowed'],
    ['http://%31%32%37.0.0.1/', 'address 127.0.0.1 is not allowed'],
    ['http://127.0.0.1./', 'address 127.0.0.1 is not allowed'],
    ['http://[::ffff:127.0.0.1]/', 'address ::ffff:7f00:1 is not allowed'],
    ['http://[::ffff:7f00:1]/', 'address ::ffff:7f00:1 is not allowed'],
    ['http://[::1]/', 'address ::1 is not allowed'],
    ['http://[::]/', 'address :: is not allowed'],
    ['http://0.0.0.0/', 'address 0.0.0.0 is not allowed'],
    ['http://169.254.169.254/latest/meta-data/', 'address 169.254.169.254 is not allowed'],
    ['http://[fd00:ec2::254]/', 'address fd00:ec2::254 is not allowed'],
    ['http://[fe80::1%25eth0]/', 'not a valid URL'],
    ['http://[fe80::1]/', 'address fe80::1 is not allowed'],
    ['http://100.64.0.1/', 'address 100.64.0.1 is not allowed'],
    ['http://10.1.2.3/', 'address 10.1.2.3 is not allowed'],
    ['http://172.16.0.1/', 'address 172.16.0.1 is not allowed'],
    ['http://192.168.1.1/', 'address 192.168.1.1 is not allowed'],
    ['http://[64:ff9b::7f00:1]/', 'address 64:ff9b::7f00:1 is not allowed'],
    ['http://[2002:7f00:1::]/', 'address 2002:7f00:1:: is not allowed'],
    ['http://localhost/', 'host localhost is not allowed'],
    ['http://LOCALHOST./', 'host localhost is not allowed'],
    ['http://foo.localhost/', 'host foo.localhost is not allowed'],
    ['http://metadata.google.internal/', 'host metadata.google.internal is not allowed'],
    ['http://printer.local:631/', 'host printer.local is not allowed'],
    ['ftp://x/', 'only http and https URLs are allowed'],
    ['file:///etc/passwd', 'only http and https URLs are allowed'],
    ['javascript:alert(1)', 'only http and https URLs are allowed'],
    ['gopher://127.0.0.1:6379/_INFO', 'only http and https URLs are allowed'],
    ['http://user:pw@example.com/', 'URL must not contain credentials'],
    ['https://token@example.com/', 'URL must not contain credentials'],
    ['not a url', 'not a valid URL'],
    ['', 'not a valid URL'],
  ])('refuses %s', (url, reason) => {
    // Act
    const result = checkUrl(url, STRICT);

    // Assess
    expect(result).toBe(reason);
  });

  it.each([
    ['https://93.184.216.34/'],
    ['https://[2606:4700::1111]/'],
    ['https://example.com/hook'],
    ['http://example.com:8080/hook?x=1#frag'],
    ['HTTPS://Example.COM/Hook'],
  ])('accepts %s', (url) => {
    // Act
    const result = checkUrl(url, STRICT);

    // Assess
    expect(result).toBeNull();
  });

  it.each([['http://127.0.0.1:3000/hook'], ['http://localhost:3000/hook'], ['http://[::1]/'], ['http://10.0.0.1/']])(
    'lets %s through when private addresses are allowed',
    (url) => {
      // Act
      const result = checkUrl(url, LOCAL);

      // Assess
      expect(result).toBeNull();
    },
  );

  it.each([
    ['http://169.254.169.254/latest/meta-data/iam/security-credentials/', 'address 169.254.169.254 is not allowed'],
    ['http://[fd00:ec2::254]/latest/api/token', 'address fd00:ec2::254 is not allowed'],
    ['http://[::ffff:169.254.169.254]/', 'address ::ffff:a9fe:a9fe is not allowed'],
    ['http://0xa9fea9fe/', 'address 169.254.169.254 is not allowed'],
    ['http://169.254.170.2/v2/credentials', 'address 169.254.170.2 is not allowed'],
  ])('refuses the cloud metadata address %s even when private addresses are allowed', (url, reason) => {
    // Act
    const local = checkUrl(url, LOCAL);
    const strict = checkUrl(url, STRICT);

    // Assess
    expect(local).toBe(reason);
    expect(strict).toBe(reason);
  });

  it.each([
    ['169.254.169.254', true],
    ['fd00:ec2::254', true],
    ['FD00:EC2:0::254', true],
    ['::ffff:169.254.169.254', true],
    ['64:ff9b::a9fe:a9fe', true],
    ['169.254.169.253', false],
    ['fd00:ec2::255', false],
    ['127.0.0.1', false],
    ['not an address', false],
  ])('isMetadataAddress(%s) is %s', (ip, expected) => {
    // Act / Assess
    expect(isMetadataAddress(ip)).toBe(expected);
  });

  it('still refuses other schemes and credentials when private addresses are allowed', () => {
    // Act
    const scheme = checkUrl('file:///etc/passwd', LOCAL);
    const credentials = checkUrl('http://a:b@127.0.0.1/', LOCAL);

    // Assess
    expect(scheme).toBe('only http and https URLs are allowed');
    expect(credentials).toBe('URL must not contain credentials');
  });

  it('never repeats the path or query of the URL in its reason', () => {
    // Act
    const result = checkUrl('http://10.0.0.1/hook?token=s3cret', STRICT);

    // Assess
    expect(result).toBe('address 10.0.0.1 is not allowed');
  });

  it('never throws and answers null or a non-empty reason on arbitrary strings', () => {
    // Prepare
    const inputs = fc.oneof(
      fc.string(),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.tuple(fc.constantFrom('http://', 'https://', 'http://[', ''), fc.string()).map(([a, b]) => a + b),
    );

    // Act / Assess
    fc.assert(
      fc.property(inputs, fc.boolean(), (url, allowPrivate) => {
        const result = checkUrl(url, { allowPrivate });
        return result === null || (typeof result === 'string' && result.length > 0);
      }),
    );
  });

  it('refuses every IPv4 literal that isBlockedAddress blocks, in any spelling WHATWG accepts', () => {
    // Prepare
    const octet = fc.integer({ min: 0, max: 255 });
    const quad = fc.tuple(octet, octet, octet, octet);

    // Act / Assess
    fc.assert(
      fc.property(quad, fc.constantFrom('dec', 'int', 'hex'), (parts, form) => {
        const dotted = parts.join('.');
        const asInt = parts.reduce((acc, p) => acc * 256 + p, 0);
        const host = form === 'dec' ? dotted : form === 'int' ? String(asInt) : `0x${asInt.toString(16)}`;
        const result = checkUrl(`http://${host}/`, STRICT);
        return isBlockedAddress(dotted) ? result === `address ${dotted} is not allowed` : result === null;
      }),
    );
  });
});
