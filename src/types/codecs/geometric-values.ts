// The JavaScript shapes of the geometric types, shared by the binary codecs
// (geometric.ts) and the text reader (geometric-text.ts).

export interface Point {
  x: number
  y: number
}
/** The line Ax + By + C = 0. */
export interface Line {
  a: number
  b: number
  c: number
}
export type LineSegment = [Point, Point]
/** Upper-right corner first, as PostgreSQL stores a box. */
export type Box = [Point, Point]
export interface Path {
  closed: boolean
  points: Point[]
}
export type Polygon = Point[]
export interface Circle {
  x: number
  y: number
  radius: number
}
