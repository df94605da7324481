ALTER TABLE "data_transfers" DROP CONSTRAINT "data_transfers_data_file_id_data_files_id_fk";
