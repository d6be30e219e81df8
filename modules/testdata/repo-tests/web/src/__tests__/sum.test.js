import { sum } from '../sum';

describe('sum', () => {
  it('adds', () => {
    expect(sum(1, 2)).toBe(3);
  });

  it.each([
    [1, 1, 2],
    [2, 2, 4],
  ])('sum(%i, %i) is %i', (a, b, c) => {
    expect(sum(a, b)).toBe(c);
  });

  test.skip('overflows', () => {});
});
