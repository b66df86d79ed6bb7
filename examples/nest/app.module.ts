import { Logger, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { OncelyModule } from 'oncely/nestjs';
import { ReportService } from './report.service.js';

@Module({
  imports: [
    ScheduleModule.forRoot(),
    // SQLite for one host; point every replica at one PostgreSQL/MySQL/Redis/etcd URL for many.
    OncelyModule.forRoot({
      storeUrl: process.env.ONCELY_STORE ?? 'sqlite:./oncely.db',
      logger: new Logger('oncely'),
    }),
  ],
  providers: [ReportService],
})
export class AppModule {}
