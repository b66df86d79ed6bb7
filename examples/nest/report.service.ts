import { Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import type { JobContext } from 'oncely';
import { ClusterJob, Once, onceContext } from 'oncely/nestjs';

@Injectable()
export class ReportService {
  private readonly logger = new Logger(ReportService.name);

  // @nestjs/schedule fires this on every replica; @Once lets one replica run each fire time.
  @Cron(CronExpression.EVERY_5_SECONDS)
  @Once({ lockAtMostFor: '1m' })
  async sendReport(): Promise<void> {
    const { fireTime, token } = onceContext()!;
    this.logger.log(`report for ${fireTime?.toISOString()} (fencing token ${token})`);
  }

  // A job of oncely's cluster scheduler: one run per fire time, overlap/misfire/retry rules.
  @ClusterJob('cleanup', { every: '5s', timeout: '4s' })
  async cleanup(ctx: JobContext): Promise<void> {
    this.logger.log(`cleanup for ${ctx.fireTime.toISOString()} on ${ctx.node}`);
  }
}
