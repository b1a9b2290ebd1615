id,name
1,this is a CSV file with the wrong name
2,it has no footer at all
id,name
1,this is a CSV file with the wrong name
2,it has no footer at all
id,name
1,this is a CSV file with the wrong name
2,it has no footer at all
id,name
1,this is a CSV file with the wrong name
2,it has no footer at all
