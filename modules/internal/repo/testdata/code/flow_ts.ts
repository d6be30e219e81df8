import { Request, Response, NextFunction } from "express";
import type { Pool } from "pg";
import { Sequelize, QueryTypes } from "sequelize";
import { execSync } from "child_process";

interface Filter {
  name?: string;
  limit: number;
}

type Handler = (req: Request, res: Response) => Promise<void>;

export class Users {
  private readonly table: string = "users";

  constructor(private db: Pool, private orm: Sequelize) {}

  async byName(req: Request, res: Response, next: NextFunction): Promise<void> {
    const filter: Filter = { name: req.query.name as string, limit: 10 };
    const rows = await this.orm.query(`SELECT * FROM users WHERE name = '${filter.name}'`); // ward:expect sql-injection
    const safe = await this.orm.query("SELECT * FROM users WHERE name = ?", { replacements: [filter.name!], type: QueryTypes.SELECT }); // ward:ok
    res.json({ rows, safe });
  }

  archive(dir: string): Buffer {
    return execSync(`tar czf /tmp/a.tgz ${dir}`); // ward:expect shell-injection
  }

  version(): Buffer {
    return execSync("git rev-parse HEAD") as Buffer; // ward:ok
  }
}

export const run: Handler = async (req, res) => {
  const code = req.body.code as string;
  res.send(String(eval(code))); // ward:expect code-injection
};
