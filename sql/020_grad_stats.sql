-- 020: a job's gradient statistics at its initial global batch (libringjob's
-- ringjob_report_grad, through its worker's metrics post): the squared norm of the gradient
-- and the variance of one batch's estimate of it. Their ratio is the gradient noise scale,
-- from which the scheduler predicts what a larger batch is worth (docs/scheduler.md
-- "Goodput"). The last report counts.

ALTER TABLE jobs
    ADD COLUMN grad_sqr double precision CHECK (grad_sqr IS NULL OR grad_sqr >= 0),
    ADD COLUMN grad_var double precision CHECK (grad_var IS NULL OR grad_var >= 0),
    ADD COLUMN grad_at timestamptz;
