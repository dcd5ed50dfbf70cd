SHOW temp_buffers
SET temp_buffers = 2000
SHOW temp_buffers
SET temp_buffers = '16MB'
SHOW temp_buffers
SET temp_buffers = 99
SET temp_buffers = 'abc'
SET temp_buffers = '100kB'
SET temp_buffers = '1MB'
SHOW temp_buffers
SELECT setting, unit, min_val, max_val FROM pg_settings WHERE name = 'temp_buffers'
SELECT current_setting('temp_buffers')
SET temp_buffers = 2000
CREATE TEMP TABLE tb (id int PRIMARY KEY, note text)
INSERT INTO tb VALUES (1, 'a'), (2, 'b')
SELECT count(*) FROM tb
SET temp_buffers = 2000
SET temp_buffers = '16000kB'
SET temp_buffers = 3000
SET temp_buffers = '8MB'
SHOW temp_buffers
BEGIN
SET LOCAL temp_buffers = 4000
ROLLBACK
SELECT set_config('temp_buffers', '100', false)
SHOW temp_buffers
DROP TABLE tb
SET temp_buffers = 3000
DISCARD TEMP
SET temp_buffers = 3000
RESET temp_buffers
SHOW temp_buffers
SET temp_buffers = 2000
SHOW temp_buffers
