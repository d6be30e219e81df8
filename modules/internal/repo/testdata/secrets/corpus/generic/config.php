<?php
$genericApiKey .= 'CLOJ@@ARS_34bf0e88955ff5a1c328d6a7491acc4f48e865a7b8dd4d70a70749037443';
$config['generic_api_key'] = "KXE4@@SVQqQmScqoXAUXFrm938xxjIG0";
